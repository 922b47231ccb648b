//! Certificates and rustls configurations: route certificates checked like the OpenShift router's extended
//! validation, the default certificate, the per-table certificate store that :443 serves from, the server
//! configurations (versions, ciphers, ALPN, client certificates) and the reencrypt client configurations.
