//! How the engine connects: the `[store] url` read into the client's
//! `Config` and a TLS connector (`postgres-openssl`) that does what the
//! URL's `sslmode` asks, as libpq does
//! (<https://www.postgresql.org/docs/current/libpq-ssl.html>).
//!
//! `tokio-postgres` knows `sslmode` `disable`, `prefer` and `require`, and
//! neither `verify-ca`, `verify-full` nor `sslrootcert`; those two options
//! are taken out of the URL here (by hand: they are the only ones, and the
//! client parses the rest) and become the connector's certificate checks.

use std::path::PathBuf;

use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use postgres_openssl::MakeTlsConnector;

use crate::error::{StoreError, StoreResult};

/// What `sslmode` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it, the certificate unchecked (libpq's
    /// default).
    Prefer,
    /// TLS or no connection, the certificate unchecked (checked against
    /// `sslrootcert` when one is named, as libpq does).
    Require,
    /// TLS, the certificate signed by `sslrootcert` (or the system's CAs).
    VerifyCa,
    /// As `VerifyCa`, and the certificate names the host connected to.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> StoreResult<SslMode> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(StoreError::Unavailable(format!(
                    "the [store] url's sslmode `{other}` is not one of disable, prefer, require, \
                     verify-ca, verify-full"
                )))
            }
        })
    }

    /// The mode the client itself is given: it knows only these three, and
    /// the connector does the checks of the others.
    fn for_client(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => "require",
        }
    }
}

/// The client's configuration and the connector every connection uses.
pub(crate) struct Connect {
    pub(crate) config: postgres::Config,
    pub(crate) tls: MakeTlsConnector,
}

impl Connect {
    /// Reads `url` (a `postgres://` URL or `key=value` words). No error
    /// repeats any part of it: it carries a password.
    pub(crate) fn new(url: &str) -> StoreResult<Connect> {
        let (rest, mode, root_cert) = take_ssl_options(url)?;
        let mode = mode.unwrap_or(SslMode::Prefer);
        let config: postgres::Config = rest.parse().map_err(|_| {
            StoreError::Unavailable("the [store] url is not a PostgreSQL URL".into())
        })?;
        let tls = connector(mode, root_cert)?;
        Ok(Connect { config, tls })
    }

    /// Why a connection fails, with the causes the pool's message leaves
    /// out (a TLS handshake's: the certificate refused, and why); `None`
    /// when one connects after all. Waits `timeout` at most.
    pub(crate) fn why_not(&self, timeout: std::time::Duration) -> Option<String> {
        let mut config = self.config.clone();
        config.connect_timeout(timeout);
        let e = config.connect(self.tls.clone()).err()?;
        let mut why = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            why.push_str(&format!(": {s}"));
            source = s.source();
        }
        Some(why)
    }

    /// The pool's connection manager.
    pub(crate) fn manager(&self) -> super::Manager {
        super::Manager::new(self.config.clone(), self.tls.clone())
    }
}

/// A connector checking what `mode` asks of the server's certificate.
fn connector(mode: SslMode, root_cert: Option<PathBuf>) -> StoreResult<MakeTlsConnector> {
    let failed = |e: openssl::error::ErrorStack| {
        StoreError::Unavailable(format!("setting up TLS to PostgreSQL: {e}"))
    };
    let mut builder = SslConnector::builder(SslMethod::tls()).map_err(failed)?;
    let verify = match mode {
        SslMode::Disable | SslMode::Prefer => false,
        SslMode::Require => root_cert.is_some(),
        SslMode::VerifyCa | SslMode::VerifyFull => true,
    };
    if verify {
        if let Some(file) = &root_cert {
            builder.set_ca_file(file).map_err(|e| {
                StoreError::Unavailable(format!(
                    "the [store] url's sslrootcert {} is not a readable PEM certificate file: {e}",
                    file.display()
                ))
            })?;
        }
        // Without sslrootcert: the system's CAs, which the builder loads.
        builder.set_verify(SslVerifyMode::PEER);
    } else {
        builder.set_verify(SslVerifyMode::NONE);
    }
    let mut tls = MakeTlsConnector::new(builder.build());
    let full = mode == SslMode::VerifyFull;
    tls.set_callback(move |config, _host| {
        config.set_verify_hostname(full);
        Ok(())
    });
    Ok(tls)
}

type SslOptions = (String, Option<SslMode>, Option<PathBuf>);

/// `url` with its `sslmode` given as the client knows it and
/// `sslrootcert` taken out, and what the two asked.
fn take_ssl_options(url: &str) -> StoreResult<SslOptions> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return Ok((url.to_string(), None, None));
        };
        let (mut mode, mut root_cert, mut kept) = (None, None, Vec::new());
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("sslmode", v)) => mode = Some(SslMode::parse(&decoded(v)?)?),
                Some(("sslrootcert", v)) => root_cert = Some(PathBuf::from(decoded(v)?)),
                _ => kept.push(pair),
            }
        }
        if let Some(mode) = mode {
            kept.push(match mode.for_client() {
                "disable" => "sslmode=disable",
                "prefer" => "sslmode=prefer",
                _ => "sslmode=require",
            });
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return Ok((rest, mode, root_cert));
    }
    // `key=value` words; a quoted value holding spaces is left to the
    // client (neither option's value needs quotes).
    let (mut mode, mut root_cert, mut kept) = (None, None, Vec::new());
    for word in url.split_whitespace() {
        match word.split_once('=') {
            Some(("sslmode", v)) => {
                let m = SslMode::parse(v.trim_matches('\''))?;
                mode = Some(m);
                kept.push(format!("sslmode={}", m.for_client()));
            }
            Some(("sslrootcert", v)) => root_cert = Some(PathBuf::from(v.trim_matches('\''))),
            _ => kept.push(word.to_string()),
        }
    }
    Ok((kept.join(" "), mode, root_cert))
}

/// A URL query value with its `%XX` escapes decoded.
fn decoded(value: &str) -> StoreResult<String> {
    let bad = || StoreError::Unavailable("the [store] url has a bad %-escape".into());
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or_else(bad)?;
            let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ssl_options_are_read_and_the_rest_left_to_the_client() {
        let (rest, mode, root) =
            take_ssl_options("postgres://u:p@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=x")
                .unwrap();
        assert_eq!(
            rest,
            "postgres://u:p@h:5/db?application_name=x&sslmode=require"
        );
        assert_eq!(mode, Some(SslMode::VerifyFull));
        assert_eq!(root, Some(PathBuf::from("/tmp/ca.pem")));
        let (rest, mode, root) = take_ssl_options("postgres://u@h/db").unwrap();
        assert_eq!(
            (rest.as_str(), mode, root),
            ("postgres://u@h/db", None, None)
        );
        let (rest, mode, _) = take_ssl_options("postgres://u@h/db?sslmode=disable").unwrap();
        assert_eq!(
            (rest.as_str(), mode),
            ("postgres://u@h/db?sslmode=disable", Some(SslMode::Disable))
        );
        let (rest, mode, root) =
            take_ssl_options("host=h user=u sslmode=verify-ca sslrootcert=/ca.pem").unwrap();
        assert_eq!(rest, "host=h user=u sslmode=require");
        assert_eq!(mode, Some(SslMode::VerifyCa));
        assert_eq!(root, Some(PathBuf::from("/ca.pem")));
    }

    #[test]
    fn an_unknown_sslmode_or_escape_is_refused_without_the_url() {
        for url in [
            "postgres://u:hunter2@h/db?sslmode=allow",
            "postgres://u:hunter2@h/db?sslrootcert=%zz",
        ] {
            let Err(e) = Connect::new(url) else {
                panic!("{url} accepted")
            };
            assert!(!e.to_string().contains("hunter2"), "{e}");
        }
        let Err(e) = Connect::new("postgres://u:hunter2@h/db?sslmode=allow") else {
            panic!()
        };
        assert!(e.to_string().contains("sslmode `allow`"), "{e}");
        let Err(e) =
            Connect::new("postgres://u:hunter2@h/db?sslmode=verify-ca&sslrootcert=/nowhere.pem")
        else {
            panic!()
        };
        assert!(e.to_string().contains("/nowhere.pem"), "{e}");
    }
}
