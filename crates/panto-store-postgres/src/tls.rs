//! Where the store connects, and whether over TLS: the connection string's `sslmode` and
//! `sslrootcert`, read as libpq users write them.
//!
//! - `sslmode=disable`, `prefer` or none: no TLS. libpq's `prefer` tries TLS without checking the
//!   server's certificate, which stops a passive eavesdropper but not an active one; panto does
//!   not pretend, and encrypts only when asked.
//! - `sslmode=require`, `verify-ca` or `verify-full`: TLS, always with the server's certificate
//!   checked against `sslrootcert` (a PEM file of CA certificates) or, without it, the Mozilla
//!   roots, and its name against the host connected to. (libpq checks nothing for `require` and
//!   no name for `verify-ca`; panto's are the stricter `verify-full` in all three.)
//!
//! tokio-postgres reads `disable`, `prefer` and `require` only, and not `sslrootcert`; they are
//! taken out of the string here before it parses the rest.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use panto_core::{Error, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use tokio_postgres::config::SslMode;
use tokio_postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::db::{invalid, pg};

/// What the errors of this module were doing.
const CONTEXT: &str = "reading the TLS options of the PostgreSQL connection string";

/// A parsed connection string and the TLS connector it asks for.
#[derive(Clone)]
pub(crate) struct Target {
    /// What tokio-postgres connects with.
    pub config: Config,
    /// `None`: a plain connection.
    pub tls: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("database", &crate::pool::describe(&self.config))
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Target {
    /// Parses `url` (a `postgres://` URL or a `key=value` string).
    pub(crate) fn parse(url: &str) -> Result<Target> {
        check_one_at(url)?;
        let (rest, options) = take_tls_options(url);
        let mut config: Config = rest
            .parse()
            .map_err(|e| pg("parsing the PostgreSQL connection string", e))?;
        let verify = match options.mode.as_deref() {
            None | Some("disable" | "prefer") => false,
            Some("require" | "verify-ca" | "verify-full") => true,
            Some(other) => {
                return Err(invalid(CONTEXT, format!(
                    "sslmode={other} in the PostgreSQL connection string: use disable, prefer, require, verify-ca or verify-full"
                )))
            }
        };
        if !verify {
            config.ssl_mode(SslMode::Disable);
            return Ok(Target { config, tls: None });
        }
        config.ssl_mode(SslMode::Require);
        let roots = match &options.root_cert {
            Some(path) => roots_from(path)?,
            None => rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            },
        };
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::store("setting up TLS for PostgreSQL", e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Target {
            config,
            tls: Some(MakeRustlsConnect::new(tls)),
        })
    }
}

/// Refuses a URL with more than one unencoded `@`.
///
/// tokio-postgres ends the user and password at the *first* `@`, so in
/// `postgres://u:p@ss@host/db` it would take `p` as the password and `ss@host` as the host, and
/// every message naming the host would show part of the password. Which `@` was meant cannot be
/// known (a query value may hold one too), so the URL is refused, without being shown, and the
/// fix is named.
fn check_one_at(url: &str) -> Result<()> {
    let Some((_, rest)) = crate::redact::url_rest(url) else {
        return Ok(());
    };
    let count = rest.matches('@').count();
    if count <= 1 {
        return Ok(());
    }
    Err(invalid(
        "reading the PostgreSQL URL",
        format!(
            "it holds {count} `@` characters, and only the one that ends the user name and password may be \
             written as is: percent-encode `@` in a password (or anywhere else) as %40"
        ),
    ))
}

/// The CA certificates of the PEM file at `path`.
fn roots_from(path: &Path) -> Result<rustls::RootCertStore> {
    let shown = path.display();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| invalid(CONTEXT, format!("sslrootcert={shown}: cannot read it: {e}")))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| invalid(CONTEXT, format!("sslrootcert={shown}: not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(
            CONTEXT,
            format!("sslrootcert={shown}: the file holds no certificate"),
        ));
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| {
            invalid(
                CONTEXT,
                format!("sslrootcert={shown}: a certificate in it is not usable: {e}"),
            )
        })?;
    }
    Ok(roots)
}

/// The TLS options of a connection string.
#[derive(Debug, Default, PartialEq, Eq)]
struct TlsOptions {
    mode: Option<String>,
    root_cert: Option<PathBuf>,
}

/// Splits `sslmode` and `sslrootcert` out of `url`, returning the rest for tokio-postgres.
fn take_tls_options(url: &str) -> (String, TlsOptions) {
    let mut options = TlsOptions::default();
    let mut keep = |key: &str, value: String| -> bool {
        match key {
            "sslmode" => options.mode = Some(value),
            "sslrootcert" => options.root_cert = Some(PathBuf::from(value)),
            _ => return true,
        }
        false
    };
    let rest = if let Some((scheme, after_scheme)) = crate::redact::url_rest(url) {
        // The query starts after the user and password, which may hold a `?` of their own.
        let authority = after_scheme.find('@').map_or(0, |at| at + 1);
        let query_at = after_scheme[authority..]
            .find('?')
            .map(|i| scheme.len() + authority + i);
        match query_at.map(|i| (&url[..i], &url[i + 1..])) {
            Some((base, query)) => {
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|pair| {
                        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                        keep(key, percent_decode(value))
                    })
                    .collect();
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
            None => url.to_owned(),
        }
    } else {
        // `key=value` pairs; these two values never need quoting in practice.
        url.split_whitespace()
            .filter(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                keep(key.trim(), value.trim_matches('\'').to_owned())
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    (rest, options)
}

/// Decodes `%XX` escapes (a path in a URL may escape `/` or spaces).
pub(crate) fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_are_taken_out_of_both_forms() {
        let (rest, o) = take_tls_options(
            "postgres://u:p@db:5432/panto?sslmode=verify-full&application_name=x&sslrootcert=%2Fetc%2Fca%20x.pem",
        );
        assert_eq!(rest, "postgres://u:p@db:5432/panto?application_name=x");
        assert_eq!(o.mode.as_deref(), Some("verify-full"));
        assert_eq!(o.root_cert, Some(PathBuf::from("/etc/ca x.pem")));
        let (rest, o) = take_tls_options("postgresql://db/panto?sslmode=require");
        assert_eq!(
            (rest.as_str(), o.mode.as_deref()),
            ("postgresql://db/panto", Some("require"))
        );
        let (rest, o) = take_tls_options("host=db dbname=panto sslmode=require sslrootcert='/ca.pem'");
        assert_eq!(rest, "host=db dbname=panto");
        assert_eq!(o.root_cert, Some(PathBuf::from("/ca.pem")));
        let (rest, o) = take_tls_options("postgres://db/panto");
        assert_eq!((rest.as_str(), o), ("postgres://db/panto", TlsOptions::default()));
    }

    #[test]
    fn modes_choose_plain_or_verified_tls() {
        for (url, tls) in [
            ("postgres://db/p", false),
            ("postgres://db/p?sslmode=disable", false),
            ("postgres://db/p?sslmode=prefer", false),
            ("postgres://db/p?sslmode=require", true),
            ("host=db sslmode=verify-ca", true),
            ("postgres://db/p?sslmode=verify-full", true),
        ] {
            let target = Target::parse(url).unwrap();
            assert_eq!(target.tls.is_some(), tls, "{url}");
            let expected = if tls { SslMode::Require } else { SslMode::Disable };
            assert_eq!(target.config.get_ssl_mode(), expected, "{url}");
        }
        let e = Target::parse("postgres://db/p?sslmode=always").unwrap_err().to_string();
        assert!(e.contains("sslmode=always"), "{e}");
        let e = Target::parse("postgres://db/p?sslmode=require&sslrootcert=/no/such/ca.pem")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sslrootcert=/no/such/ca.pem") && e.contains("cannot read"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        let e = Target::parse(&format!("host=db sslmode=require sslrootcert={}", empty.display()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds no certificate"), "{e}");
    }
}
