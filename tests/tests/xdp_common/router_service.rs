//! The router's own Service as the XDP nodePort tests declare it: `openshift-ingress/router-default`,
//! LoadBalancer with `externalTrafficPolicy: Local`, both families, whose endpoints are the node's addresses
//! on the node the router runs on (a hostNetwork DaemonSet pod), so that its nodePorts lead to that router.
//! The router reads it with `--router-service openshift-ingress/router-default --node-name <node>`.

/// The nodePort of the Service's http port (to the router's :80).
pub const HTTP_NODE_PORT: u16 = 30080;
/// The nodePort of its https port (to the router's :443).
pub const HTTPS_NODE_PORT: u16 = 30443;
/// Its healthCheckNodePort, answered by the router as kube-proxy would.
pub const HEALTH_CHECK_NODE_PORT: u16 = 32000;

/// The Service and its IPv4 and IPv6 EndpointSlices, the endpoints `node4` and `node6` on `router_node`.
pub fn router_service(node4: &str, node6: &str, router_node: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Service
metadata: {{name: router-default, namespace: openshift-ingress}}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  ipFamilies: [IPv4, IPv6]
  healthCheckNodePort: {HEALTH_CHECK_NODE_PORT}
  ports:
  - {{name: http, port: 80, targetPort: http, nodePort: {HTTP_NODE_PORT}, protocol: TCP}}
  - {{name: https, port: 443, targetPort: https, nodePort: {HTTPS_NODE_PORT}, protocol: TCP}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: router-default-v4
  namespace: openshift-ingress
  labels: {{kubernetes.io/service-name: router-default}}
addressType: IPv4
ports: [{{name: http, port: 80, protocol: TCP}}, {{name: https, port: 443, protocol: TCP}}]
endpoints: [{{addresses: ["{node4}"], nodeName: {router_node}, conditions: {{ready: true}}}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: router-default-v6
  namespace: openshift-ingress
  labels: {{kubernetes.io/service-name: router-default}}
addressType: IPv6
ports: [{{name: http, port: 80, protocol: TCP}}, {{name: https, port: 443, protocol: TCP}}]
endpoints: [{{addresses: ["{node6}"], nodeName: {router_node}}}]
"#
    )
}
