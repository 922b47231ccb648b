//! Synthetic manifests in the shape the bench writes, for measuring route churn (`examples/churn.rs`, the
//! churn breakdown test).

use std::fmt::Write as _;

/// Service + EndpointSlice (`pods` pods on 127.0.0.11...) + Route per name, as the bench (and `oc get -o yaml`)
/// writes them.
pub fn bench_manifests<'n>(names: impl Iterator<Item = &'n str>, pods: usize) -> String {
    let mut out = String::new();
    for name in names {
        let _ = write!(
            out,
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: bench\nspec:\n  ports:\n  \
             - name: http\n    port: 80\n    protocol: TCP\n    targetPort: 8080\n---\n\
             apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}-1\n  namespace: bench\n  \
             labels:\n    kubernetes.io/service-name: {name}\naddressType: IPv4\nports:\n- name: http\n  port: 8080\n  \
             protocol: TCP\nendpoints:\n"
        );
        for pod in 0..pods {
            let _ = write!(
                out,
                "- addresses:\n  - \"127.0.0.{ip}\"\n  conditions:\n    ready: true\n  targetRef:\n    kind: Pod\n    \
                 name: bench-pod-{pod}\n    namespace: bench\n",
                ip = 11 + pod
            );
        }
        let _ = write!(
            out,
            "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: {name}\n  namespace: bench\n  \
             creationTimestamp: \"2026-11-01T10:00:00Z\"\nspec:\n  host: {name}.bench.example.com\n  to:\n    \
             kind: Service\n    name: {name}\n    weight: 100\n  wildcardPolicy: None\n---\n"
        );
    }
    out
}
