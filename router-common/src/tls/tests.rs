//! Tests of the ClientHello reader against hellos captured from real clients (testdata/, see
//! testdata/README.md) and against hellos built field by field.

extern crate std;

use std::vec::Vec;
use std::{format, vec};

use super::*;

/// `openssl s_client -connect 127.0.0.1:PORT -servername Foo.Example.com` (OpenSSL 3.0).
const OPENSSL_SNI: &[u8] = include_bytes!("testdata/openssl_sni.bin");
/// The same with `-noservername`.
const OPENSSL_NO_SNI: &[u8] = include_bytes!("testdata/openssl_no_sni.bin");
/// The same with `-alpn h2,http/1.1`.
const OPENSSL_ALPN: &[u8] = include_bytes!("testdata/openssl_alpn.bin");
/// The same with `-tls1_2`: no supported_versions extension.
const OPENSSL_TLS12: &[u8] = include_bytes!("testdata/openssl_tls12.bin");
/// `curl -k --resolve foo.example.com:PORT:127.0.0.1 https://foo.example.com:PORT/` (curl 7.88, OpenSSL 3.0).
const CURL: &[u8] = include_bytes!("testdata/curl_alpn.bin");

const FIXTURES: [&[u8]; 5] = [OPENSSL_SNI, OPENSSL_NO_SNI, OPENSSL_ALPN, OPENSSL_TLS12, CURL];

/// A [`Parsed`] detached from its buffers, so results of separate calls compare.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    NeedMore,
    Hello { name: Option<Vec<u8>>, alpn: Vec<Vec<u8>>, legacy_version: u16, tls13: bool, consumed: usize },
    Error(HelloError),
}

impl Outcome {
    fn hello_name(&self) -> Option<&[u8]> {
        match self {
            Outcome::Hello { name, .. } => name.as_deref(),
            other => panic!("expected a hello, got {other:?}"),
        }
    }

    fn with_consumed(&self, n: usize) -> Outcome {
        let mut out = self.clone();
        if let Outcome::Hello { consumed, .. } = &mut out {
            *consumed = n;
        }
        out
    }
}

fn run_with(buf: &[u8], scratch_len: usize) -> Outcome {
    let mut scratch = vec![0u8; scratch_len];
    match parse_client_hello(buf, &mut scratch) {
        Ok(Parsed::NeedMore) => Outcome::NeedMore,
        Ok(Parsed::Hello(h)) => Outcome::Hello {
            name: h.server_name.map(|n| n.as_bytes().to_vec()),
            alpn: h.alpn.iter().map(<[u8]>::to_vec).collect(),
            legacy_version: h.legacy_version,
            tls13: h.supported_versions_has_tls13,
            consumed: h.consumed,
        },
        Err(e) => Outcome::Error(e),
    }
}

fn run(buf: &[u8]) -> Outcome {
    run_with(buf, MAX_HELLO)
}

fn malformed(buf: &[u8]) -> &'static str {
    match run(buf) {
        Outcome::Error(HelloError::Malformed(what)) => what,
        other => panic!("expected Malformed, got {other:?}"),
    }
}

/// Checks the promise of [`parse_client_hello`] on every prefix of `stream`: `NeedMore` until the
/// answer for the whole stream is reached, then that answer.
fn assert_prefixes_consistent(stream: &[u8], scratch_len: usize) {
    let full = run_with(stream, scratch_len);
    let mut decided = false;
    for n in 0..=stream.len() {
        let got = run_with(&stream[..n], scratch_len);
        match &full {
            Outcome::Hello { consumed, .. } if n < *consumed => assert_eq!(got, Outcome::NeedMore, "prefix {n}"),
            Outcome::NeedMore => assert_eq!(got, Outcome::NeedMore, "prefix {n}"),
            _ if decided => assert_eq!(got, full, "prefix {n} after the answer"),
            _ if got == Outcome::NeedMore => {}
            _ => {
                assert_eq!(got, full, "prefix {n}");
                decided = true;
            }
        }
    }
}

/// The handshake message (header and body) of a fixture sent in one record.
fn message(fixture: &[u8]) -> &[u8] {
    let len = usize::from(u16::from_be_bytes([fixture[3], fixture[4]]));
    assert_eq!(fixture.len(), 5 + len, "fixture is one record");
    &fixture[5..]
}

/// One handshake record carrying `fragment`.
fn record(fragment: &[u8]) -> Vec<u8> {
    let len = u16::try_from(fragment.len()).expect("fragment fits a record");
    let mut out = vec![0x16, 0x03, 0x01];
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(fragment);
    out
}

/// `message` re-recorded into records cut at the given message offsets.
fn rerecord(message: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([message.len()].iter()) {
        out.extend(record(&message[from..cut]));
        from = cut;
    }
    out
}

/// A handshake message of type `ty` with `body`.
fn handshake(ty: u8, body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(body.len()).expect("body length");
    let mut out = vec![ty];
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.extend_from_slice(body);
    out
}

/// A ClientHello body: TLS 1.2 legacy_version, zero random, empty session id, one suite, null
/// compression, then `extensions` as the raw extensions block (`None`: no block at all).
fn body_with_block(extensions: Option<&[u8]>) -> Vec<u8> {
    let mut out = vec![0x03, 0x03];
    out.extend_from_slice(&[0u8; 32]);
    out.extend_from_slice(&[0x00, 0x00, 0x02, 0x13, 0x01, 0x01, 0x00]);
    if let Some(block) = extensions {
        out.extend_from_slice(&u16::try_from(block.len()).expect("block length").to_be_bytes());
        out.extend_from_slice(block);
    }
    out
}

/// A one-record ClientHello carrying the given extensions (type, data).
fn hello(extensions: &[(u16, &[u8])]) -> Vec<u8> {
    let mut block = Vec::new();
    for (ty, data) in extensions {
        block.extend_from_slice(&ty.to_be_bytes());
        block.extend_from_slice(&u16::try_from(data.len()).expect("extension length").to_be_bytes());
        block.extend_from_slice(data);
    }
    record(&handshake(1, &body_with_block(Some(&block))))
}

/// server_name extension data with the given (name_type, name) entries.
fn sni(entries: &[(u8, &[u8])]) -> Vec<u8> {
    let mut list = Vec::new();
    for (ty, name) in entries {
        list.push(*ty);
        list.extend_from_slice(&u16::try_from(name.len()).expect("name length").to_be_bytes());
        list.extend_from_slice(name);
    }
    let mut out = u16::try_from(list.len()).expect("list length").to_be_bytes().to_vec();
    out.extend(list);
    out
}

/// ALPN extension data with the given names.
fn alpn(names: &[&[u8]]) -> Vec<u8> {
    let mut list = Vec::new();
    for name in names {
        list.push(u8::try_from(name.len()).expect("name length"));
        list.extend_from_slice(name);
    }
    let mut out = u16::try_from(list.len()).expect("list length").to_be_bytes().to_vec();
    out.extend(list);
    out
}

#[test]
fn openssl_hello_with_sni() {
    let mut scratch = [0u8; MAX_HELLO];
    let Ok(Parsed::Hello(h)) = parse_client_hello(OPENSSL_SNI, &mut scratch) else { panic!("no hello") };
    let name = h.server_name.expect("server name");
    assert_eq!(name.as_bytes(), b"Foo.Example.com", "case as sent");
    assert!(name.eq_ignore_ascii_case(b"foo.example.com"));
    assert!(name.eq_ignore_ascii_case(b"FOO.EXAMPLE.COM"));
    assert!(!name.eq_ignore_ascii_case(b"foo.example.co"));
    assert!(h.alpn.is_empty());
    assert_eq!(h.alpn.iter().count(), 0);
    assert_eq!(h.legacy_version, 0x0303);
    assert!(h.supported_versions_has_tls13);
    assert_eq!(h.consumed, OPENSSL_SNI.len());
}

#[test]
fn openssl_hello_without_sni() {
    let out = run(OPENSSL_NO_SNI);
    assert_eq!(out.hello_name(), None);
    assert!(matches!(out, Outcome::Hello { tls13: true, consumed, .. } if consumed == OPENSSL_NO_SNI.len()));
}

#[test]
fn openssl_hello_with_alpn() {
    let mut scratch = [0u8; MAX_HELLO];
    let Ok(Parsed::Hello(h)) = parse_client_hello(OPENSSL_ALPN, &mut scratch) else { panic!("no hello") };
    let names: Vec<&[u8]> = h.alpn.into_iter().collect();
    assert_eq!(names, [&b"h2"[..], &b"http/1.1"[..]]);
    assert!(h.alpn.contains(b"h2"));
    assert!(h.alpn.contains(b"http/1.1"));
    assert!(!h.alpn.contains(b"h3"));
    assert!(!h.alpn.contains(b"h"));
    assert_eq!(format!("{:?}", h.alpn), r#"["h2", "http/1.1"]"#);
    assert_eq!(format!("{:?}", h.server_name), r#"Some(ServerName("Foo.Example.com"))"#);
}

#[test]
fn curl_hello_with_sni_and_alpn() {
    let out = run(CURL);
    assert_eq!(out.hello_name(), Some(&b"foo.example.com"[..]));
    let Outcome::Hello { alpn, tls13, legacy_version, consumed, .. } = out else { unreachable!() };
    assert_eq!(alpn, [b"h2".to_vec(), b"http/1.1".to_vec()]);
    assert!(tls13);
    assert_eq!(legacy_version, 0x0303);
    assert_eq!(consumed, CURL.len());
}

#[test]
fn tls12_only_client() {
    let out = run(OPENSSL_TLS12);
    assert_eq!(out.hello_name(), Some(&b"Foo.Example.com"[..]));
    assert!(matches!(out, Outcome::Hello { tls13: false, legacy_version: 0x0303, .. }));
}

#[test]
fn every_prefix_of_a_fixture_needs_more() {
    for fixture in FIXTURES {
        let full = run(fixture);
        assert!(matches!(full, Outcome::Hello { .. }));
        for n in 0..fixture.len() {
            assert_eq!(run(&fixture[..n]), Outcome::NeedMore, "prefix {n}");
        }
        assert_prefixes_consistent(fixture, MAX_HELLO);
    }
}

#[test]
fn bytes_after_the_hello_are_not_read() {
    for tail in [&b"\x17\x03\x03\x00\x05hello"[..], b"GET / HTTP/1.1\r\n", b"\x16\x03"] {
        let mut stream = OPENSSL_ALPN.to_vec();
        stream.extend_from_slice(tail);
        assert_eq!(run(&stream), run(OPENSSL_ALPN));
    }
}

#[test]
fn hello_fragmented_over_two_records_at_every_offset() {
    for fixture in FIXTURES {
        let msg = message(fixture);
        let whole = run(fixture);
        for cut in 1..msg.len() {
            let stream = rerecord(msg, &[cut]);
            assert_eq!(run(&stream), whole.with_consumed(stream.len()), "cut at {cut}");
        }
    }
}

#[test]
fn hello_fragmented_over_three_records() {
    let msg = message(CURL);
    let whole = run(CURL);
    for first in [1, 2, 3, 4, 5, 40, 100] {
        for second in [first + 1, first + 3, 200, msg.len() - 1] {
            let stream = rerecord(msg, &[first, second]);
            assert_eq!(run(&stream), whole.with_consumed(stream.len()), "cuts at {first}, {second}");
        }
    }
    // Byte by byte, with the handshake header split over three records.
    let stream = rerecord(msg, &[1, 3, 300]);
    assert_eq!(run(&stream), whole.with_consumed(stream.len()));
    for n in 0..stream.len() {
        assert_eq!(run(&stream[..n]), Outcome::NeedMore, "prefix {n}");
    }
}

#[test]
fn non_handshake_record_inside_the_hello() {
    let msg = message(OPENSSL_SNI);
    let mut stream = record(&msg[..100]);
    stream.extend_from_slice(&[0x17, 0x03, 0x03, 0x00, 0x02, 0xab, 0xcd]);
    stream.extend(record(&msg[100..]));
    assert_eq!(run(&stream), Outcome::Error(HelloError::NotClientHello));
    // Decided by the content type byte alone.
    assert_eq!(run(&stream[..106]), Outcome::Error(HelloError::NotClientHello));
    assert_eq!(run(&stream[..105]), Outcome::NeedMore);

    // A change_cipher_spec record in the middle, as a middlebox-compatibility client sends later.
    let mut stream = record(&msg[..10]);
    stream.extend_from_slice(&[0x14, 0x03, 0x03, 0x00, 0x01, 0x01]);
    assert_eq!(run(&stream), Outcome::Error(HelloError::NotClientHello));

    // A later record with a foreign version.
    let mut stream = record(&msg[..10]);
    stream.extend_from_slice(&[0x16, 0x02, 0x00]);
    assert_eq!(run(&stream), Outcome::Error(HelloError::Malformed("record version")));
}

#[test]
fn first_message_not_a_client_hello() {
    // A ServerHello (type 2), refused on its type byte.
    let stream = record(&handshake(2, &body_with_block(None)));
    assert_eq!(run(&stream), Outcome::Error(HelloError::NotClientHello));
    assert_eq!(run(&stream[..6]), Outcome::Error(HelloError::NotClientHello));
    assert_eq!(run(&stream[..5]), Outcome::NeedMore);
}

#[test]
fn non_tls_bytes() {
    let cases: [&[u8]; 7] = [
        b"GET / HTTP/1.1\r\nHost: foo.example.com\r\n\r\n",
        b"PROXY TCP4 127.0.0.1 127.0.0.1 40000 443\r\n",
        b"\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x0c",
        // SSLv2-framed ClientHello.
        b"\x80\x2e\x01\x00\x02\x00\x15",
        // Handshake type with a major version that is not 3.
        b"\x16\x02\x00\x00\x10",
        // An alert record first.
        b"\x15\x03\x03\x00\x02\x02\x28",
        b"\x00",
    ];
    for bytes in cases {
        assert_eq!(run(bytes), Outcome::Error(HelloError::NotTls), "{bytes:?}");
        assert_eq!(looks_like_tls(bytes), Some(false));
    }
    // One byte is enough to refuse HTTP.
    assert_eq!(run(b"G"), Outcome::Error(HelloError::NotTls));
    assert_eq!(looks_like_tls(b"G"), Some(false));
}

#[test]
fn looks_like_tls_needs_two_bytes() {
    assert_eq!(looks_like_tls(b""), None);
    assert_eq!(looks_like_tls(b"\x16"), None);
    assert_eq!(looks_like_tls(b"\x16\x03"), Some(true));
    assert_eq!(looks_like_tls(b"\x16\x04"), Some(false));
    for fixture in FIXTURES {
        assert_eq!(looks_like_tls(fixture), Some(true));
    }
}

#[test]
fn record_length_out_of_range() {
    assert_eq!(malformed(b"\x16\x03\x01\x00\x00"), "empty handshake record");
    assert_eq!(malformed(b"\x16\x03\x01\x40\x01\x01"), "record longer than 2^14 bytes");
    assert_eq!(run(b"\x16\x03\x01\x40\x00\x01"), Outcome::NeedMore);
    // An empty record later in the hello is refused too.
    let msg = message(OPENSSL_SNI);
    let mut stream = record(&msg[..10]);
    stream.extend_from_slice(b"\x16\x03\x01\x00\x00");
    assert_eq!(malformed(&stream), "empty handshake record");
}

#[test]
fn record_running_past_the_hello() {
    let mut msg = message(OPENSSL_SNI).to_vec();
    msg.push(0x01);
    assert_eq!(malformed(&record(&msg)), "record holds bytes past the ClientHello");
    // Known from the headers, before the record is complete.
    assert_eq!(malformed(&record(&msg)[..9]), "record holds bytes past the ClientHello");
    // The same in the last of several records.
    let stream = rerecord(&msg, &[50]);
    assert_eq!(malformed(&stream), "record holds bytes past the ClientHello");
    // Whatever the scratch size: the answer does not depend on it.
    assert_eq!(
        run_with(&record(&msg), 0),
        Outcome::Error(HelloError::Malformed("record holds bytes past the ClientHello"))
    );
    assert_eq!(run_with(&stream, 0), Outcome::Error(HelloError::TooLarge));
}

#[test]
fn fragmented_hello_larger_than_scratch() {
    let msg = message(OPENSSL_SNI);
    let stream = rerecord(msg, &[100]);
    assert_eq!(run_with(&stream, msg.len()), run(OPENSSL_SNI).with_consumed(stream.len()));
    assert_eq!(run_with(&stream, msg.len() - 1), Outcome::Error(HelloError::TooLarge));
    // Refused as soon as the header tells the length, before the rest arrives.
    assert_eq!(run_with(&stream[..9], msg.len() - 1), Outcome::Error(HelloError::TooLarge));
    // A header split over records, into an empty scratch.
    assert_eq!(run_with(&rerecord(msg, &[2])[..14], 0), Outcome::Error(HelloError::TooLarge));
    // A hello in one record needs no scratch at all.
    assert_eq!(run_with(OPENSSL_SNI, 0), run(OPENSSL_SNI));
}

#[test]
fn declared_length_far_beyond_max_hello() {
    // A 16 MiB handshake message announced in the first record's first bytes.
    let stream = b"\x16\x03\x01\x40\x00\x01\xff\xff\xff";
    assert_eq!(run(stream), Outcome::Error(HelloError::TooLarge));
    assert_eq!(run(&stream[..8]), Outcome::NeedMore);
}

#[test]
fn hello_of_max_hello_bytes_fits_and_one_more_does_not() {
    // A padding extension (type 21) sized so that the message is exactly MAX_HELLO bytes.
    let base = handshake(1, &body_with_block(Some(&[0x00, 0x15, 0x00, 0x00]))).len();
    let pad = vec![0u8; MAX_HELLO - base];
    let msg = message(&hello(&[(0x0015, &pad)])).to_vec();
    assert_eq!(msg.len(), MAX_HELLO);
    let stream = rerecord(&msg, &[super::record::MAX_FRAGMENT]);
    assert!(matches!(run(&stream), Outcome::Hello { .. }));
    assert_eq!(run(&stream[..stream.len() - 1]), Outcome::NeedMore);

    let pad = vec![0u8; MAX_HELLO - base + 1];
    let stream = rerecord(message(&hello(&[(0x0015, &pad)])), &[super::record::MAX_FRAGMENT]);
    assert_eq!(run(&stream), Outcome::Error(HelloError::TooLarge));
}

#[test]
fn records_beyond_max_records() {
    let msg = message(OPENSSL_SNI);
    let cuts: Vec<usize> = (1..MAX_RECORDS).collect();
    let stream = rerecord(msg, &cuts);
    assert_eq!(run(&stream), run(OPENSSL_SNI).with_consumed(stream.len()), "{MAX_RECORDS} records");
    let cuts: Vec<usize> = (1..=MAX_RECORDS).collect();
    assert_eq!(run(&rerecord(msg, &cuts)), Outcome::Error(HelloError::TooLarge));
}

#[test]
fn truncated_body_at_every_offset() {
    // Cutting the body short while keeping the outer lengths consistent leaves some inner length
    // field pointing past its container, except at the one cut that drops the extensions block whole.
    for fixture in FIXTURES {
        let body = &message(fixture)[4..];
        let session_id = usize::from(body[34]);
        let suites = usize::from(u16::from_be_bytes([body[35 + session_id], body[36 + session_id]]));
        let compression = usize::from(body[37 + session_id + suites]);
        let no_extensions = 38 + session_id + suites + compression;
        for cut in 0..body.len() {
            let out = run(&record(&handshake(1, &body[..cut])));
            if cut == no_extensions {
                assert!(
                    matches!(out, Outcome::Hello { name: None, tls13: false, ref alpn, .. } if alpn.is_empty()),
                    "{out:?}"
                );
            } else {
                assert!(matches!(out, Outcome::Error(HelloError::Malformed(_))), "cut at {cut}: {out:?}");
            }
        }
    }
}

#[test]
fn hello_without_extensions() {
    let out = run(&record(&handshake(1, &body_with_block(None))));
    assert!(matches!(out, Outcome::Hello { name: None, tls13: false, legacy_version: 0x0303, .. }), "{out:?}");
    // An empty extensions block is the same.
    let out = run(&hello(&[]));
    assert!(matches!(out, Outcome::Hello { name: None, .. }), "{out:?}");
}

#[test]
fn fixed_fields_out_of_range() {
    let mut body = body_with_block(None);
    body[34] = 33;
    body.extend_from_slice(&[0u8; 33]);
    assert_eq!(malformed(&record(&handshake(1, &body))), "legacy_session_id longer than 32 bytes");

    let mut body = body_with_block(None);
    body[36] = 3; // odd cipher_suites length
    body.push(0);
    assert_eq!(malformed(&record(&handshake(1, &body))), "cipher_suites length not a positive even number");

    let mut body = body_with_block(None);
    body.truncate(35);
    body.extend_from_slice(&[0x00, 0x00, 0x01, 0x00]); // no cipher suites
    assert_eq!(malformed(&record(&handshake(1, &body))), "cipher_suites length not a positive even number");

    let mut body = body_with_block(None);
    body.truncate(39);
    body.push(0); // no compression methods
    assert_eq!(malformed(&record(&handshake(1, &body))), "empty legacy_compression_methods");

    let mut body = body_with_block(Some(&[]));
    body.push(0);
    assert_eq!(malformed(&record(&handshake(1, &body))), "bytes after the extensions");

    let body = body_with_block(Some(&[0x00, 0x15, 0x00, 0x05, 0x00]));
    assert_eq!(malformed(&record(&handshake(1, &body))), "extension length");

    let body = body_with_block(Some(&[0x00, 0x15, 0x00]));
    assert_eq!(malformed(&record(&handshake(1, &body))), "extension length");

    let body = body_with_block(Some(&[0x00]));
    assert_eq!(malformed(&record(&handshake(1, &body))), "truncated extension type");
}

#[test]
fn server_name_list_shapes() {
    // Zero-length host_name.
    assert_eq!(malformed(&hello(&[(0, &sni(&[(0, b"")]))])), "empty host_name");
    // Two host_names.
    let two = sni(&[(0, b"a.example.com"), (0, b"b.example.com")]);
    assert_eq!(malformed(&hello(&[(0, &two)])), "more than one host_name");
    // A name of an unknown type beside the host_name is skipped.
    let mixed = sni(&[(7, b"opaque"), (0, b"B.example.com")]);
    assert_eq!(run(&hello(&[(0, &mixed)])).hello_name(), Some(&b"B.example.com"[..]));
    // Only names of unknown types.
    assert_eq!(malformed(&hello(&[(0, &sni(&[(7, b"opaque")]))])), "server_name_list without a host_name");
    // Empty extension data and an empty list.
    assert_eq!(malformed(&hello(&[(0, b"")])), "server_name_list length");
    assert_eq!(malformed(&hello(&[(0, b"\x00\x00")])), "empty server_name_list");
    // List length longer, then shorter, than the extension.
    assert_eq!(malformed(&hello(&[(0, b"\x00\x09\x00\x00\x03abc")])), "server_name_list length");
    assert_eq!(malformed(&hello(&[(0, b"\x00\x05\x00\x00\x03abc")])), "bytes after server_name_list");
    // Name length past the list; a lone name_type byte.
    assert_eq!(malformed(&hello(&[(0, b"\x00\x06\x00\x00\x04abc")])), "server name length");
    assert_eq!(malformed(&hello(&[(0, b"\x00\x01\x00")])), "server name length");
    // Two server_name extensions.
    let one = sni(&[(0, b"a.example.com")]);
    assert_eq!(malformed(&hello(&[(0, &one), (0, &one)])), "duplicate server_name extension");
    // A well-formed one, among other extensions.
    let out = run(&hello(&[(0x000b, b"\x01\x00"), (0, &one), (0x0015, b"\0\0")]));
    assert_eq!(out.hello_name(), Some(&b"a.example.com"[..]));
}

#[test]
fn alpn_list_shapes() {
    let out = run(&hello(&[(0x10, &alpn(&[b"h2", b"http/1.1"]))]));
    assert!(matches!(&out, Outcome::Hello { alpn, .. } if alpn == &[b"h2".to_vec(), b"http/1.1".to_vec()]));
    assert_eq!(malformed(&hello(&[(0x10, &alpn(&[b"h2", b""]))])), "empty protocol name");
    assert_eq!(malformed(&hello(&[(0x10, &alpn(&[]))])), "empty protocol_name_list");
    assert_eq!(malformed(&hello(&[(0x10, b"")])), "protocol_name_list length");
    assert_eq!(malformed(&hello(&[(0x10, b"\x00\x03\x02h2\x00")])), "bytes after protocol_name_list");
    assert_eq!(malformed(&hello(&[(0x10, b"\x00\x03\x03h2")])), "protocol name length");
    let list = alpn(&[b"h2"]);
    assert_eq!(malformed(&hello(&[(0x10, &list), (0x10, &list)])), "duplicate ALPN extension");
}

#[test]
fn supported_versions_shapes() {
    let tls13 = |exts: &[(u16, &[u8])]| match run(&hello(exts)) {
        Outcome::Hello { tls13, .. } => tls13,
        other => panic!("{other:?}"),
    };
    assert!(tls13(&[(0x2b, b"\x04\x7a\x7a\x03\x04")]));
    assert!(!tls13(&[(0x2b, b"\x04\x03\x03\x03\x02")]));
    assert!(!tls13(&[]));
    assert_eq!(malformed(&hello(&[(0x2b, b"\x00")])), "supported_versions length not a positive even number");
    assert_eq!(
        malformed(&hello(&[(0x2b, b"\x03\x03\x04\x03")])),
        "supported_versions length not a positive even number"
    );
    assert_eq!(malformed(&hello(&[(0x2b, b"\x04\x03\x04")])), "supported_versions length");
    assert_eq!(malformed(&hello(&[(0x2b, b"\x02\x03\x04\x00")])), "bytes after supported_versions");
    let v = b"\x02\x03\x04";
    assert_eq!(malformed(&hello(&[(0x2b, v), (0x2b, v)])), "duplicate supported_versions extension");
}

#[test]
fn mutated_fixtures_stay_consistent_under_prefixes() {
    // A small deterministic fuzz: every byte of a fixture (and of a fragmented copy) replaced by a
    // few values; no panic, and every prefix agrees with the whole.
    let fragmented = rerecord(message(OPENSSL_ALPN), &[3, 150]);
    for stream in [OPENSSL_ALPN, &fragmented[..]] {
        for at in 0..stream.len() {
            for value in [0x00, 0xff, stream[at] ^ 0x01, stream[at].wrapping_add(1)] {
                let mut mutated = stream.to_vec();
                mutated[at] = value;
                assert_prefixes_consistent(&mutated, MAX_HELLO);
            }
        }
    }
}
