//! How openshift/router's exporter turns HAProxy proxy names into labels: a backend `be_http:ns:name` becomes
//! `backend="http", namespace="ns", route="name"` (`be_edge_http` -> `https-edge`, `be_secure` -> `https`,
//! `be_tcp` -> `tcp`; any other backend `other/<name>`), and a server `pod:<pod>:<service>:<port>:<ip>:<port>`
//! (or `ept:<service>:<port>:<ip>:<port>`) becomes `server="<ip>:<port>"` with its pod and service.

/// `(backend, namespace, route)` labels of a backend name.
pub fn backend_labels(name: &str) -> (String, String, String) {
    let known = name.split_once(':').and_then(|(prefix, rest)| {
        let mode = match prefix {
            "be_http" => "http",
            "be_edge_http" => "https-edge",
            "be_secure" => "https",
            "be_tcp" => "tcp",
            _ => return None,
        };
        let (namespace, route) = rest.split_once(':')?;
        Some((mode.to_string(), namespace.to_string(), route.to_string()))
    });
    known.unwrap_or_else(|| (format!("other/{name}"), String::new(), String::new()))
}

/// `(server, pod, service)` labels of a server id; an id of another shape is the server label whole.
pub fn server_labels(id: &str) -> (String, String, String) {
    let known = id.split_once(':').and_then(|(prefix, rest)| match prefix {
        "ept" => {
            let (service, rest) = rest.split_once(':')?;
            let (_, server) = rest.split_once(':')?;
            Some((server.to_string(), String::new(), service.to_string()))
        }
        "pod" => {
            let (pod, rest) = rest.split_once(':')?;
            let (service, rest) = rest.split_once(':')?;
            let (_, server) = rest.split_once(':')?;
            Some((server.to_string(), pod.to_string(), service.to_string()))
        }
        _ => None,
    });
    known.unwrap_or_else(|| (id.to_string(), String::new(), String::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(labels: (&str, &str, &str)) -> (String, String, String) {
        (labels.0.into(), labels.1.into(), labels.2.into())
    }

    #[test]
    fn backend_names_become_mode_namespace_and_route() {
        assert_eq!(backend_labels("be_http:ns:web"), owned(("http", "ns", "web")));
        assert_eq!(backend_labels("be_edge_http:ns:web"), owned(("https-edge", "ns", "web")));
        assert_eq!(backend_labels("be_secure:ns:web"), owned(("https", "ns", "web")));
        assert_eq!(backend_labels("be_tcp:ns:web"), owned(("tcp", "ns", "web")));
        assert_eq!(backend_labels("openshift_default"), owned(("other/openshift_default", "", "")));
        assert_eq!(backend_labels("be_http:nocolon"), owned(("other/be_http:nocolon", "", "")));
    }

    #[test]
    fn server_ids_become_address_pod_and_service() {
        assert_eq!(server_labels("pod:web-1:web:http:10.1.0.5:8080"), owned(("10.1.0.5:8080", "web-1", "web")));
        assert_eq!(server_labels("ept:web:8080:10.1.0.5:8080"), owned(("10.1.0.5:8080", "", "web")));
        assert_eq!(server_labels("pod:web-1:web:http:fd00::5:8080"), owned(("fd00::5:8080", "web-1", "web")));
        assert_eq!(server_labels("other"), owned(("other", "", "")));
    }
}
