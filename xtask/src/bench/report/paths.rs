//! How the paths of the machine a bench ran on appear in its results file: files of the bench's scratch directory
//! as `<work>/...`, files of the repository relative to its root (`target/release/router`), and a router binary
//! from elsewhere (`XTASK_BENCH_ROUTER`) relative to the root too. A results file is committed, so it names none of
//! the machine's absolute paths; the namespaces and pin directories have their own placeholders (`<node>`,
//! `<pins>`), written where the commands are made.

use std::path::{Component, Path, PathBuf};

/// Placeholder of the bench's scratch directory.
pub const WORK: &str = "<work>";

/// The absolute paths to replace in the results, and what each becomes.
#[derive(Clone, Debug, Default)]
pub struct ShownPaths {
    /// (absolute path, shown as), longest path first so that a path inside another is matched first. An empty
    /// "shown as" is the repository root: what follows it is already relative.
    rules: Vec<(String, String)>,
}

impl ShownPaths {
    /// `work`: the bench's scratch directory; `root`: the repository; `files`: files named in the commands that may
    /// lie outside both (the router binary), shown relative to `root`.
    pub fn new(work: &Path, root: &Path, files: &[&Path]) -> ShownPaths {
        let mut rules = vec![(text(work), WORK.to_string()), (text(root), String::new())];
        for file in files {
            if file.is_absolute() && !file.starts_with(work) && !file.starts_with(root) {
                rules.push((text(file), text(&relative_to(file, root))));
            }
        }
        rules.retain(|(from, _)| from.len() > 1);
        rules.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        ShownPaths { rules }
    }

    /// `text` with every absolute path of the rules replaced. A rule's path matches only as a whole path or a
    /// leading part of one (`/tmp/xtask-bench-12` does not match inside `/tmp/xtask-bench-1280/`).
    pub fn show(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (from, to) in &self.rules {
            out = replace_path(&out, from, to);
        }
        out
    }
}

fn text(path: &Path) -> String {
    path.to_string_lossy().trim_end_matches('/').to_string()
}

/// `path` relative to the directory `base` (both absolute), with `..` where it lies outside.
fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let path: Vec<Component> = path.components().collect();
    let base: Vec<Component> = base.components().collect();
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    out.extend(&path[common..]);
    out
}

/// Characters that continue a path name: a match followed by one of them is part of a longer name.
fn continues_name(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '~')
}

/// `text` with each whole-path occurrence of `from` replaced by `to` (an empty `to` drops `from/`, or leaves `.`
/// for `from` alone).
fn replace_path(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let after = &rest[at + from.len()..];
        let next = after.chars().next();
        if next.is_some_and(continues_name) {
            out.push_str(&rest[..at + from.len()]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        match (to.is_empty(), next) {
            (true, Some('/')) => {
                rest = &after[1..];
                continue;
            }
            (true, _) => out.push('.'),
            (false, _) => out.push_str(to),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown() -> ShownPaths {
        ShownPaths::new(
            Path::new("/tmp/xtask-bench-12805"),
            Path::new("/src/repo"),
            &[Path::new("/src/bench-bins/router-071f624"), Path::new("/src/repo/target/release/router")],
        )
    }

    #[test]
    fn commands_name_the_work_dir_and_the_repository_relatively() {
        let shown = shown();
        assert_eq!(
            shown.show(
                "DEFAULT_CERTIFICATE_PATH=/tmp/xtask-bench-12805/pki/default.pem taskset -c 1 \
                 /src/repo/target/release/router --manifests /tmp/xtask-bench-12805/manifests-10"
            ),
            "DEFAULT_CERTIFICATE_PATH=<work>/pki/default.pem taskset -c 1 target/release/router --manifests \
             <work>/manifests-10"
        );
        assert_eq!(
            shown.show(
                "taskset -c 1 nsenter --net=<node> /src/bench-bins/router-071f624 --bpf-pin-dir /sys/fs/bpf/<pins>"
            ),
            "taskset -c 1 nsenter --net=<node> ../bench-bins/router-071f624 --bpf-pin-dir /sys/fs/bpf/<pins>",
            "a binary beside the repository is relative to its root; placeholders stay"
        );
        assert_eq!(shown.show("nginx -p /tmp/xtask-bench-12805 (in /src/repo)"), "nginx -p <work> (in .)");
    }

    #[test]
    fn only_whole_path_names_match() {
        let shown = shown();
        let other = "/tmp/xtask-bench-128050/x /src/repo2/y /src/repoly";
        assert_eq!(shown.show(other), other, "a longer name that starts alike is another path");
        assert_eq!(shown.show("'/src/repo/a b'"), "'a b'");
    }

    #[test]
    fn a_work_dir_inside_the_repository_is_still_the_work_dir() {
        let shown = ShownPaths::new(Path::new("/src/repo/tmp/bench-1"), Path::new("/src/repo"), &[]);
        assert_eq!(shown.show("/src/repo/tmp/bench-1/h2load.log /src/repo/deploy"), "<work>/h2load.log deploy");
    }

    #[test]
    fn relative_paths_climb_out_of_the_root() {
        assert_eq!(relative_to(Path::new("/src/bench-bins/r"), Path::new("/src/repo")), Path::new("../bench-bins/r"));
        assert_eq!(relative_to(Path::new("/opt/r"), Path::new("/src/repo")), Path::new("../../opt/r"));
        assert_eq!(relative_to(Path::new("/src/repo/t/r"), Path::new("/src/repo")), Path::new("t/r"));
    }
}
