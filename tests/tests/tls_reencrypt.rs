//! Reencrypt: the router terminates the client's TLS and opens TLS to the pod, verified with the route's
//! destinationCACertificate (chain only), else with DEFAULT_DESTINATION_CA_PATH and the name
//! `<service>.<namespace>.svc`, else not at all. A pod that fails verification gets no request: 503.

use router::config::Settings;
use router_tests::backend::TestBackend;
use router_tests::cli::curl_https;
use router_tests::manifests::{service, ManifestDir, RouteSpec, RouteTls};
use router_tests::pki::{self_signed_leaf, PemDir, TestCa};
use router_tests::start_tls_router;
use router_tests::tls_client::{client_config, https_get, Trust};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destination_ca_verifies_the_pod_and_a_wrong_one_gives_503() {
    let (pod_ca, other_ca, front_ca) = (TestCa::new("pod-ca"), TestCa::new("other-ca"), TestCa::new("front-ca"));
    let good_leaf = pod_ca.leaf(&["pod.internal"]);
    let foreign_leaf = other_ca.leaf(&["pod.internal"]);
    let front = front_ca.leaf(&["re.example.com"]);
    let good = TestBackend::start_tls("good-pod", &good_leaf.chain_pem(), &good_leaf.key_pem).await;
    let foreign = TestBackend::start_tls("foreign-pod", &foreign_leaf.chain_pem(), &foreign_leaf.key_pem).await;
    let files = PemDir::new();
    let front_ca_file = files.write("front-ca.pem", &front_ca.cert_pem);
    let dir = ManifestDir::new();
    let verified = RouteSpec {
        tls: Some(
            RouteTls::reencrypt()
                .with_certificate(&front.cert_pem, &front.key_pem)
                .with_destination_ca(&pod_ca.cert_pem),
        ),
        ..RouteSpec::new("ns", "re", "re.example.com", "good")
    };
    let mismatched = RouteSpec {
        tls: Some(RouteTls::reencrypt().with_destination_ca(&pod_ca.cert_pem)),
        ..RouteSpec::new("ns", "wrong", "wrong.example.com", "foreign")
    };
    dir.write(
        "all.yaml",
        &[
            service("ns", "good", &[good.addr]),
            service("ns", "foreign", &[foreign.addr]),
            verified.yaml(),
            mismatched.yaml(),
        ]
        .concat(),
    );
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let ca_arg = front_ca_file.to_str().expect("path");
    let reply = curl_https(https, "re.example.com", "/deep?q=1", &["--cacert", ca_arg]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
    let report = reply.report();
    assert_eq!(report["backend"], "good-pod");
    assert_eq!(report["path"], "/deep?q=1");
    assert!(report["tls"].is_object(), "the pod was reached over TLS: {report}");
    assert_eq!(reply.seen_header("x-forwarded-proto"), ["https"]);

    let reply = curl_https(https, "wrong.example.com", "/", &["-k"]).await;
    assert_eq!(reply.status, 503, "a pod whose certificate does not chain to destinationCACertificate");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_destination_ca_checks_the_service_name() {
    let ca = TestCa::new("service-ca");
    let other_ca = TestCa::new("other-ca");
    let right = ca.leaf(&["web.shop.svc", "web.shop.svc.cluster.local"]);
    let wrong_name = ca.leaf(&["other.shop.svc"]);
    let wrong_ca = other_ca.leaf(&["foreign.shop.svc"]);
    let web = TestBackend::start_tls("web-pod", &right.chain_pem(), &right.key_pem).await;
    let api = TestBackend::start_tls("api-pod", &wrong_name.chain_pem(), &wrong_name.key_pem).await;
    let foreign = TestBackend::start_tls("foreign-pod", &wrong_ca.chain_pem(), &wrong_ca.key_pem).await;
    let files = PemDir::new();
    let dir = ManifestDir::new();
    let reencrypt = |name: &'static str, host: &'static str, service: &'static str| {
        RouteSpec { tls: Some(RouteTls::reencrypt()), ..RouteSpec::new("shop", name, host, service) }.yaml()
    };
    dir.write(
        "all.yaml",
        &[
            service("shop", "web", &[web.addr]),
            service("shop", "api", &[api.addr]),
            service("shop", "foreign", &[foreign.addr]),
            reencrypt("web", "web.example.com", "web"),
            reencrypt("api", "api.example.com", "api"),
            reencrypt("foreign", "foreign.example.com", "foreign"),
        ]
        .concat(),
    );
    let mut settings = Settings::for_loopback(dir.path());
    settings.tls.default_destination_ca_path = Some(files.write("service-ca.pem", &ca.cert_pem));
    let (router, https) = start_tls_router(settings).await;

    let anything = client_config(Trust::Anything, &["http/1.1"], None);
    let reply = https_get(https, Some("web.example.com"), "web.example.com", "/", anything.clone()).await;
    assert_eq!(reply.status, 200, "the pod presents web.shop.svc from the default destination CA");
    assert_eq!(reply.backend(), "web-pod");
    let reply = https_get(https, Some("api.example.com"), "api.example.com", "/", anything.clone()).await;
    assert_eq!(reply.status, 503, "the pod of service api presents other.shop.svc");
    let reply = https_get(https, Some("foreign.example.com"), "foreign.example.com", "/", anything).await;
    assert_eq!(reply.status, 503, "the pod's certificate is not from the default destination CA");
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_any_destination_ca_the_pod_is_not_verified() {
    let leaf = self_signed_leaf(&["whatever.internal"]);
    let pod = TestBackend::start_tls("pod", &leaf.cert_pem, &leaf.key_pem).await;
    let dir = ManifestDir::new();
    let route = RouteSpec { tls: Some(RouteTls::reencrypt()), ..RouteSpec::new("ns", "re", "re.example.com", "pod") };
    dir.write("all.yaml", &[service("ns", "pod", &[pod.addr]), route.yaml()].concat());
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let reply = curl_https(https, "re.example.com", "/", &["-k"]).await;
    assert_eq!((reply.exit_code, reply.status), (0, 200), "{}", reply.stderr);
    assert_eq!(reply.report()["backend"], "pod");
    assert!(reply.report()["tls"].is_object());
    router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edge_and_reencrypt_routes_share_a_host_by_path_and_plain_ones_stay_off_443() {
    let leaf = self_signed_leaf(&["pod.internal"]);
    let secure = TestBackend::start_tls("secure-pod", &leaf.cert_pem, &leaf.key_pem).await;
    let (front, plain) = (TestBackend::start("front").await, TestBackend::start("plain").await);
    let dir = ManifestDir::new();
    let edge = RouteSpec { tls: Some(RouteTls::edge()), ..RouteSpec::new("ns", "front", "mixed.example.com", "front") };
    let reencrypt = RouteSpec {
        path: "/secure",
        tls: Some(RouteTls::reencrypt()),
        ..RouteSpec::new("ns", "secure", "mixed.example.com", "secure")
    };
    let http_only = RouteSpec { path: "/plain", ..RouteSpec::new("ns", "plain", "mixed.example.com", "plain") };
    dir.write(
        "all.yaml",
        &[
            service("ns", "front", &[front.addr]),
            service("ns", "secure", &[secure.addr]),
            service("ns", "plain", &[plain.addr]),
            edge.yaml(),
            reencrypt.yaml(),
            http_only.yaml(),
        ]
        .concat(),
    );
    let (router, https) = start_tls_router(Settings::for_loopback(dir.path())).await;

    let anything = client_config(Trust::Anything, &["http/1.1"], None);
    let cases = [("/", "front"), ("/secure", "secure-pod"), ("/secure/x", "secure-pod"), ("/plain", "front")];
    for (path, want) in cases {
        let reply = https_get(https, Some("mixed.example.com"), "mixed.example.com", path, anything.clone()).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.backend(), want, "{path} over TLS: the http route /plain is not on :443");
    }
    assert_eq!(router_tests::client::get(router.http_addr, "mixed.example.com", "/plain").await.backend(), "plain");
    router.shutdown().await;
}
