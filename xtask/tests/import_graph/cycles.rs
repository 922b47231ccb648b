//! Cycles in a directed graph of named nodes: the strongly connected components (Tarjan), and for each one a
//! shortest cycle through its first node, written out with the reference behind every edge of the component.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// from -> to -> why (e.g. `bench/report/mod.rs:20 super::runner::Bench`).
pub type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// The components of more than one node, each sorted, in node order.
pub fn components(graph: &Graph) -> Vec<Vec<String>> {
    let mut tarjan = Tarjan { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), out: Vec::new() };
    let nodes: BTreeSet<&String> = graph.keys().chain(graph.values().flat_map(BTreeMap::keys)).collect();
    for node in nodes {
        if !tarjan.index.contains_key(node.as_str()) {
            tarjan.visit(node);
        }
    }
    let mut out = tarjan.out;
    for component in &mut out {
        component.sort();
    }
    out.sort();
    out
}

struct Tarjan<'a> {
    graph: &'a Graph,
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    out: Vec<Vec<String>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, node: &'a str) {
        let index = self.index.len();
        self.index.insert(node, index);
        self.low.insert(node, index);
        self.stack.push(node);
        for next in self.graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            let next = next.as_str();
            match self.index.get(next) {
                None => {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                }
                Some(&next_index) if self.stack.contains(&next) => {
                    let low = self.low[node].min(next_index);
                    self.low.insert(node, low);
                }
                Some(_) => {}
            }
        }
        if self.low[node] == index {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                component.push(member.to_string());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                self.out.push(component);
            }
        }
    }
}

/// A shortest cycle from the component's first node back to it, inside the component: `[a, b, c, a]`.
pub fn cycle_through_first(graph: &Graph, component: &[String]) -> Vec<String> {
    let members: BTreeSet<&str> = component.iter().map(String::as_str).collect();
    let Some(start) = component.first() else { return Vec::new() };
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([start.as_str()]);
    while let Some(node) = queue.pop_front() {
        for next in graph.get(node).into_iter().flat_map(BTreeMap::keys).map(String::as_str) {
            if !members.contains(next) {
                continue;
            }
            if next == start {
                // Back along the discovery path: node, ..., start.
                let mut cycle = vec![node.to_string()];
                let mut at = node;
                while let Some(previous) = came_from.get(at) {
                    cycle.push(previous.to_string());
                    at = previous;
                }
                cycle.reverse();
                cycle.push(start.clone());
                return cycle;
            }
            if !came_from.contains_key(next) {
                came_from.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    Vec::new()
}

/// `what` cycle `a -> b -> a`, then each edge inside the component with its reason.
pub fn describe(graph: &Graph, component: &[String], what: &str) -> String {
    let cycle = cycle_through_first(graph, component);
    let mut out = format!("{what} import cycle: {}\n", cycle.join(" -> "));
    let members: BTreeSet<&String> = component.iter().collect();
    for from in component {
        for (to, why) in graph.get(from).into_iter().flatten() {
            if members.contains(to) {
                out.push_str(&format!("    {from} -> {to}: {why}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &str)]) -> Graph {
        let mut graph = Graph::new();
        for (from, to) in edges {
            graph.entry(from.to_string()).or_default().insert(to.to_string(), format!("{from} uses {to}"));
        }
        graph
    }

    #[test]
    fn components_are_the_cycles_only() {
        let g = graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "a")]);
        assert_eq!(components(&g), [vec!["a", "b", "c"], vec!["d", "e"]]);
        assert!(components(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    }

    #[test]
    fn the_cycle_is_a_shortest_one_and_the_description_names_each_edge() {
        let g = graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("b", "a")]);
        let component = &components(&g)[0];
        assert_eq!(cycle_through_first(&g, component), ["a", "b", "a"]);
        let text = describe(&g, component, "file-level");
        assert!(text.starts_with("file-level import cycle: a -> b -> a\n"), "{text}");
        assert!(text.contains("    c -> a: c uses a\n"), "{text}");
    }
}
