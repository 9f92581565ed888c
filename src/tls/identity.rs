//! Reduction of a verified client certificate to the few facts authorization needs.

use std::fmt;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::digest::{hex, sha256_hex};
use x509_parser::der_parser::asn1_rs::{Any, Tag, ToDer};
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate, X509Name};

/// Identity of a peer whose certificate chained to the configured client CA.
///
/// Only built from certificates rustls has already verified, so the fields can be
/// trusted as far as the CA is trusted. `Debug` shows only the fingerprint so that an
/// accidental `?identity` in a log line cannot leak certificate contents.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ClientIdentity {
    /// Lowercase hex SHA-256 of the leaf certificate DER; stable, content-free handle.
    pub fingerprint_sha256: String,
    /// Subject in RFC 4514 form (most specific RDN first), e.g. `CN=svc-a,O=Hospital`.
    /// Empty when the subject could not be decoded.
    pub subject: String,
    /// Subject alternative names: DNS names, URIs, e-mail addresses and IP addresses,
    /// each as a plain string without a type prefix.
    pub sans: Vec<String>,
}

impl ClientIdentity {
    /// Builds the identity from a leaf certificate's DER bytes.
    ///
    /// Never fails: the certificate was verified by rustls/webpki, so if the stricter
    /// x509 parser rejects some detail we still keep the fingerprint (which can be
    /// mapped explicitly) and leave subject/SANs empty, which can never match a
    /// configured identity by accident.
    pub fn from_der(der: &[u8]) -> Self {
        let fingerprint_sha256 = sha256_hex(der);
        match X509Certificate::from_der(der) {
            Ok((_, cert)) => ClientIdentity {
                fingerprint_sha256,
                subject: rfc4514_name(cert.subject()),
                sans: collect_sans(&cert),
            },
            Err(_) => {
                tracing::debug!(
                    fingerprint = %fingerprint_sha256,
                    "verified client certificate could not be decoded; using fingerprint only"
                );
                ClientIdentity {
                    fingerprint_sha256,
                    subject: String::new(),
                    sans: Vec::new(),
                }
            }
        }
    }

    /// Values of every `CN` attribute in [`Self::subject`], unescaped, in subject order.
    ///
    /// Parsed back from the subject string (rather than stored separately) so that an
    /// identity built by hand, e.g. in a handler test, behaves the same way.
    pub fn common_names(&self) -> Vec<String> {
        split_unescaped(&self.subject, &[',', '+'])
            .into_iter()
            .filter_map(|ava| {
                let (ty, value) = ava.split_once('=')?;
                ty.trim()
                    .eq_ignore_ascii_case("CN")
                    .then(|| unescape_value(value))
            })
            .collect()
    }
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("fingerprint_sha256", &self.fingerprint_sha256)
            .field("subject", &"<redacted>")
            .field("sans", &format_args!("<{} redacted>", self.sans.len()))
            .finish()
    }
}

/// Formats a name as RFC 4514 does: RDNs in reverse encoding order, `,` between RDNs,
/// `+` inside multi-valued RDNs, short names for well-known attribute types.
fn rfc4514_name(name: &X509Name<'_>) -> String {
    let rdns: Vec<String> = name
        .iter_rdn()
        .map(|rdn| {
            rdn.iter()
                .map(|ava| {
                    let oid = ava.attr_type().to_id_string();
                    let ty = attribute_short_name(&oid)
                        .unwrap_or(oid.as_str())
                        .to_owned();
                    format!("{ty}={}", attribute_value(ava.attr_value()))
                })
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    rdns.into_iter().rev().collect::<Vec<_>>().join(",")
}

/// RFC 4514 §3 names, plus the two OpenSSL spellings operators commonly copy.
fn attribute_short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.6" => "C",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        "2.5.4.5" => "serialNumber",
        "1.2.840.113549.1.9.1" => "emailAddress",
        _ => return None,
    })
}

/// String-typed values are escaped text; anything else is `#` + hex of its DER, as
/// RFC 4514 §2.4 prescribes for values without a string representation.
fn attribute_value(value: &Any<'_>) -> String {
    let text = match value.tag() {
        Tag::Utf8String
        | Tag::PrintableString
        | Tag::Ia5String
        | Tag::NumericString
        | Tag::VisibleString => std::str::from_utf8(value.data).ok().map(str::to_owned),
        Tag::BmpString => decode_bmp(value.data),
        Tag::UniversalString => decode_universal(value.data),
        _ => None,
    };
    match text {
        Some(t) => escape_value(&t),
        None => match value.to_der_vec() {
            Ok(der) => format!("#{}", hex(&der)),
            Err(_) => format!("#{}", hex(value.data)),
        },
    }
}

fn decode_bmp(data: &[u8]) -> Option<String> {
    if !data.len().is_multiple_of(2) {
        return None;
    }
    let units: Vec<u16> = data
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).ok()
}

fn decode_universal(data: &[u8]) -> Option<String> {
    if !data.len().is_multiple_of(4) {
        return None;
    }
    data.chunks_exact(4)
        .map(|c| char::from_u32(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
        .collect()
}

/// RFC 4514 §2.4 escaping; control characters are hex-escaped too so the subject is
/// always a single printable line.
pub(super) fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, ch) in value.chars().enumerate() {
        match ch {
            '"' | '+' | ',' | ';' | '<' | '>' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            '#' if i == 0 => out.push_str("\\#"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\{b:02x}");
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Splits on separator characters that are not backslash-escaped.
fn split_unescaped<'a>(s: &'a str, seps: &[char]) -> Vec<&'a str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, ch) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if ch == '\\' {
            escaped = true;
        } else if seps.contains(&ch) {
            parts.push(&s[start..i]);
            start = i + ch.len_utf8();
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Inverse of [`escape_value`] (`\c` and `\hh` forms).
fn unescape_value(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            let hex_pair = bytes
                .get(i + 1..i + 3)
                .and_then(|p| std::str::from_utf8(p).ok())
                .and_then(|p| u8::from_str_radix(p, 16).ok());
            match hex_pair {
                Some(b) => {
                    out.push(b);
                    i += 3;
                }
                None => {
                    out.push(bytes[i + 1]);
                    i += 2;
                }
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn collect_sans(cert: &X509Certificate<'_>) -> Vec<String> {
    let Ok(Some(ext)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    ext.value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(s) | GeneralName::URI(s) | GeneralName::RFC822Name(s) => {
                Some((*s).to_owned())
            }
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => <[u8; 4]>::try_from(*bytes)
                    .ok()
                    .map(|b| Ipv4Addr::from(b).to_string()),
                16 => <[u8; 16]>::try_from(*bytes)
                    .ok()
                    .map(|b| Ipv6Addr::from(b).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_specials_and_edges() {
        assert_eq!(escape_value("a,b+c"), "a\\,b\\+c");
        assert_eq!(escape_value(" lead"), "\\ lead");
        assert_eq!(escape_value("trail "), "trail\\ ");
        assert_eq!(escape_value("#x"), "\\#x");
        assert_eq!(escape_value("a\u{0}b"), "a\\00b");
        assert_eq!(escape_value("Zoë"), "Zoë");
    }

    #[test]
    fn common_names_round_trip_escaping() {
        let id = ClientIdentity {
            fingerprint_sha256: "00".into(),
            subject: format!("CN={}+UID=7,OU=x\\,y,O=Hospital", escape_value("svc, a")),
            sans: vec![],
        };
        assert_eq!(id.common_names(), vec!["svc, a".to_owned()]);
        let none = ClientIdentity {
            fingerprint_sha256: "00".into(),
            subject: String::new(),
            sans: vec![],
        };
        assert!(none.common_names().is_empty());
    }

    #[test]
    fn debug_redacts_contents() {
        let id = ClientIdentity {
            fingerprint_sha256: "ab".into(),
            subject: "CN=secret-name".into(),
            sans: vec!["secret.example".into()],
        };
        let dbg = format!("{id:?}");
        assert!(dbg.contains("ab"));
        assert!(!dbg.contains("secret"));
    }

    #[test]
    fn garbage_der_keeps_fingerprint_only() {
        let id = ClientIdentity::from_der(b"not a certificate");
        assert_eq!(id.fingerprint_sha256, sha256_hex(b"not a certificate"));
        assert!(id.subject.is_empty() && id.sans.is_empty());
    }
}
