//! The ClientHello body (RFC 8446 section 4.1.2, RFC 5246 section 7.4.1.2) and the three extensions
//! the router looks at: server_name (RFC 6066 section 3), application_layer_protocol_negotiation
//! (RFC 7301) and supported_versions (RFC 8446 section 4.2.1).
//!
//! Every length field is checked against its container; the views handed out borrow the checked bytes.

use core::fmt;

use super::reader::Reader;
use super::HelloError;

/// Bytes of ClientHello.random.
const RANDOM_LEN: usize = 32;
/// Longest legacy_session_id, in bytes.
const MAX_SESSION_ID: usize = 32;

const EXT_SERVER_NAME: u16 = 0x0000;
const EXT_ALPN: u16 = 0x0010;
const EXT_SUPPORTED_VERSIONS: u16 = 0x002b;

/// ServerName.name_type of a DNS host name.
const NAME_TYPE_HOST_NAME: u8 = 0;

/// TLS 1.3 in supported_versions.
const TLS13: [u8; 2] = [3, 4];

/// Upper bound on extensions in one hello: each takes at least 4 bytes of a block of at most 2^16 - 1.
const MAX_EXTENSIONS: usize = (u16::MAX as usize) / 4 + 1;
/// Upper bound on entries in a server_name_list: each takes at least 3 bytes of at most 2^16 - 1.
const MAX_SERVER_NAMES: usize = (u16::MAX as usize) / 3 + 1;
/// Upper bound on names in a protocol_name_list: each takes at least 2 bytes of at most 2^16 - 1.
const MAX_PROTOCOLS: usize = (u16::MAX as usize) / 2 + 1;

/// What the router reads from a ClientHello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientHello<'a> {
    /// The host_name from the server_name extension, `None` when the client sent no server_name.
    pub server_name: Option<ServerName<'a>>,
    /// The ALPN protocol names in the client's order; empty when the client sent no ALPN extension.
    pub alpn: AlpnProtocols<'a>,
    /// ClientHello.legacy_version (0x0303 for TLS 1.2 and 1.3 clients).
    pub legacy_version: u16,
    /// Whether a supported_versions extension lists TLS 1.3 (0x0304).
    pub supported_versions_has_tls13: bool,
    /// Bytes of the stream, from its start, taken by the records that carried the ClientHello. Bytes
    /// after this offset (early data, the next flight) were not read.
    pub consumed: usize,
}

/// The host_name of the server_name extension, as the client sent it (not case-folded; not empty).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ServerName<'a>(&'a [u8]);

impl<'a> ServerName<'a> {
    /// The name's bytes as sent. DNS names are ASCII; the caller lowercases before looking them up.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// Compares with `other` ignoring ASCII case, as DNS names compare.
    pub fn eq_ignore_ascii_case(&self, other: &[u8]) -> bool {
        self.0.eq_ignore_ascii_case(other)
    }
}

impl fmt::Debug for ServerName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServerName(\"{}\")", self.0.escape_ascii())
    }
}

/// The checked protocol_name_list of an ALPN extension (or nothing); iterate it for the names.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct AlpnProtocols<'a> {
    /// Concatenated ProtocolName vectors (1-byte length, then the name), already validated.
    list: &'a [u8],
}

impl<'a> AlpnProtocols<'a> {
    /// No ALPN extension.
    pub const EMPTY: AlpnProtocols<'static> = AlpnProtocols { list: &[] };

    /// True when the client offered no protocol.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The protocol names in the client's order.
    pub fn iter(&self) -> AlpnIter<'a> {
        AlpnIter { rest: Reader::new(self.list) }
    }

    /// Whether the client offered exactly `protocol` (ALPN names compare byte for byte).
    pub fn contains(&self, protocol: &[u8]) -> bool {
        self.iter().any(|p| p == protocol)
    }
}

impl<'a> IntoIterator for AlpnProtocols<'a> {
    type Item = &'a [u8];
    type IntoIter = AlpnIter<'a>;

    fn into_iter(self) -> AlpnIter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &AlpnProtocols<'a> {
    type Item = &'a [u8];
    type IntoIter = AlpnIter<'a>;

    fn into_iter(self) -> AlpnIter<'a> {
        self.iter()
    }
}

impl fmt::Debug for AlpnProtocols<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        for name in self.iter() {
            list.entry(&format_args!("\"{}\"", name.escape_ascii()));
        }
        list.finish()
    }
}

/// Iterator over the names of [`AlpnProtocols`].
#[derive(Clone)]
pub struct AlpnIter<'a> {
    rest: Reader<'a>,
}

impl<'a> Iterator for AlpnIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        // The list was validated when the hello was read, so this does not fail; if it did, stop.
        match self.rest.prefixed8("protocol name") {
            Ok(name) => Some(name),
            Err(_) => {
                self.rest = Reader::new(&[]);
                None
            }
        }
    }
}

/// Reads a complete ClientHello body (the handshake message without its 4-byte header).
/// `consumed` is passed through into the result.
pub(crate) fn parse_body(body: &[u8], consumed: usize) -> Result<ClientHello<'_>, HelloError> {
    let mut r = Reader::new(body);
    let legacy_version = r.u16("truncated legacy_version")?;
    r.take(RANDOM_LEN, "truncated random")?;
    let session_id = r.prefixed8("legacy_session_id length")?;
    if session_id.len() > MAX_SESSION_ID {
        return Err(HelloError::Malformed("legacy_session_id longer than 32 bytes"));
    }
    let suites = r.prefixed16("cipher_suites length")?;
    if suites.is_empty() || suites.len() % 2 != 0 {
        return Err(HelloError::Malformed("cipher_suites length not a positive even number"));
    }
    let compression = r.prefixed8("legacy_compression_methods length")?;
    if compression.is_empty() {
        return Err(HelloError::Malformed("empty legacy_compression_methods"));
    }

    let mut hello = ClientHello {
        server_name: None,
        alpn: AlpnProtocols::EMPTY,
        legacy_version,
        supported_versions_has_tls13: false,
        consumed,
    };
    // Before TLS 1.3 the extensions block may be left out altogether.
    if r.is_empty() {
        return Ok(hello);
    }
    let extensions = r.prefixed16("extensions length")?;
    if !r.is_empty() {
        return Err(HelloError::Malformed("bytes after the extensions"));
    }

    let mut seen_alpn = false;
    let mut seen_versions = false;
    let mut exts = Reader::new(extensions);
    for _ in 0..MAX_EXTENSIONS {
        if exts.is_empty() {
            break;
        }
        let ty = exts.u16("truncated extension type")?;
        let data = exts.prefixed16("extension length")?;
        match ty {
            EXT_SERVER_NAME => {
                if hello.server_name.is_some() {
                    return Err(HelloError::Malformed("duplicate server_name extension"));
                }
                hello.server_name = Some(parse_server_name(data)?);
            }
            EXT_ALPN => {
                if seen_alpn {
                    return Err(HelloError::Malformed("duplicate ALPN extension"));
                }
                seen_alpn = true;
                hello.alpn = parse_alpn(data)?;
            }
            EXT_SUPPORTED_VERSIONS => {
                if seen_versions {
                    return Err(HelloError::Malformed("duplicate supported_versions extension"));
                }
                seen_versions = true;
                hello.supported_versions_has_tls13 = parse_supported_versions(data)?;
            }
            _ => {}
        }
    }
    Ok(hello)
}

/// server_name extension data: a non-empty ServerNameList (2-byte length) of entries, each a name_type
/// byte and a 2-byte-length name. Exactly one non-empty host_name is required; entries of other name
/// types are skipped.
fn parse_server_name(data: &[u8]) -> Result<ServerName<'_>, HelloError> {
    let mut r = Reader::new(data);
    let list = r.prefixed16("server_name_list length")?;
    if !r.is_empty() {
        return Err(HelloError::Malformed("bytes after server_name_list"));
    }
    if list.is_empty() {
        return Err(HelloError::Malformed("empty server_name_list"));
    }
    let mut host_name = None;
    let mut entries = Reader::new(list);
    for _ in 0..MAX_SERVER_NAMES {
        if entries.is_empty() {
            break;
        }
        let name_type = entries.u8("truncated name_type")?;
        let name = entries.prefixed16("server name length")?;
        if name_type != NAME_TYPE_HOST_NAME {
            continue;
        }
        if name.is_empty() {
            return Err(HelloError::Malformed("empty host_name"));
        }
        if host_name.is_some() {
            return Err(HelloError::Malformed("more than one host_name"));
        }
        host_name = Some(ServerName(name));
    }
    host_name.ok_or(HelloError::Malformed("server_name_list without a host_name"))
}

/// ALPN extension data: a ProtocolNameList (2-byte length, at least one name) of names with a 1-byte
/// length, none empty.
fn parse_alpn(data: &[u8]) -> Result<AlpnProtocols<'_>, HelloError> {
    let mut r = Reader::new(data);
    let list = r.prefixed16("protocol_name_list length")?;
    if !r.is_empty() {
        return Err(HelloError::Malformed("bytes after protocol_name_list"));
    }
    if list.is_empty() {
        return Err(HelloError::Malformed("empty protocol_name_list"));
    }
    let mut names = Reader::new(list);
    for _ in 0..MAX_PROTOCOLS {
        if names.is_empty() {
            break;
        }
        if names.prefixed8("protocol name length")?.is_empty() {
            return Err(HelloError::Malformed("empty protocol name"));
        }
    }
    Ok(AlpnProtocols { list })
}

/// supported_versions extension data in a ClientHello: a 1-byte length and at least one 2-byte version.
/// Returns whether TLS 1.3 is among them.
fn parse_supported_versions(data: &[u8]) -> Result<bool, HelloError> {
    let mut r = Reader::new(data);
    let versions = r.prefixed8("supported_versions length")?;
    if !r.is_empty() {
        return Err(HelloError::Malformed("bytes after supported_versions"));
    }
    if versions.is_empty() || versions.len() % 2 != 0 {
        return Err(HelloError::Malformed("supported_versions length not a positive even number"));
    }
    Ok(versions.chunks_exact(2).any(|v| v == TLS13))
}
