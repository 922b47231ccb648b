//! The :443 listener: PROXY header (optional), ClientHello inspection, then passthrough to a pod or TLS
//! termination followed by the HTTP proxy.
