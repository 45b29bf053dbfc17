//! The web as the `web_fetch` tool reaches it: which addresses it may connect to, and the
//! resolver names are looked up through. For embedders that test their configuration or resolve
//! names their own way ([`crate::Options::web_resolver`]).
//!
//! `web_fetch` connects only to addresses [`check_address`] accepts. A host name is resolved
//! through the [`Resolver`] inside the HTTP client's connector, and the addresses it returns are
//! checked there, so the address checked is the address connected to (a name that resolves to
//! `127.0.0.1` is refused, and a name cannot resolve to one address for the check and another
//! for the connection). A host written as an address (`http://10.0.0.1/`), which the client does
//! not resolve, is checked before the request. Every redirect hop is checked again the same way.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use async_trait::async_trait;

/// How `web_fetch` turns a host name into addresses. The default is [`SystemResolver`]; a test
/// or an embedder with its own name service gives another ([`crate::Options::web_resolver`]).
/// Whatever it returns is checked by [`check_address`] before anything connects.
#[async_trait]
pub trait Resolver: Send + Sync + fmt::Debug {
    /// The addresses of `host` (a name, never an address literal).
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>>;
}

/// The system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl Resolver for SystemResolver {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        Ok(tokio::net::lookup_host((host, 0)).await?.map(|a| a.ip()).collect())
    }
}

/// Why `web_fetch` does not connect to `ip` unless private addresses are allowed: `None` for a
/// public address. IPv4 addresses written in IPv6 (`::ffff:127.0.0.1`, `::127.0.0.1`,
/// `64:ff9b::7f00:1`) are judged as the IPv4 address they carry.
pub fn refused_address(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

/// Whether `ip` is a cloud provider's instance metadata address (`169.254.169.254`,
/// `fd00:ec2::254`, and their IPv4-in-IPv6 forms): refused even where private addresses are
/// allowed, since what it serves is the machine's credentials.
pub fn is_metadata_address(ip: IpAddr) -> bool {
    const METADATA_V4: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
    const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);
    match ip {
        IpAddr::V4(v4) => v4 == METADATA_V4,
        IpAddr::V6(v6) => v6 == METADATA_V6 || embedded_v4(v6) == Some(METADATA_V4),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if is_metadata_address(IpAddr::V4(ip)) {
        Some("the cloud metadata address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address (RFC 1918)")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if a == 0 {
        Some("an unspecified (\"this network\") address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("a multicast, broadcast or reserved address")
    } else {
        None
    }
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if is_metadata_address(IpAddr::V6(ip)) {
        Some("the cloud metadata address")
    } else if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("the unspecified address")
    } else if let Some(v4) = embedded_v4(ip) {
        refused_v4(v4)
    } else if first & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if first & 0xfe00 == 0xfc00 {
        Some("a unique-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else {
        None
    }
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if ip.to_ipv4_mapped().is_some() || s[..6] == [0; 6] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(tail)
    } else {
        None
    }
}

/// Whether `web_fetch` may connect to `ip`. With `allow_private` every address but the cloud
/// metadata address may be used ([`is_metadata_address`]); without it, the addresses
/// [`refused_address`] names are refused. The error names the address and why.
pub fn check_address(ip: IpAddr, allow_private: bool) -> Result<(), String> {
    let why = if allow_private {
        is_metadata_address(ip).then_some("the cloud metadata address")
    } else {
        refused_address(ip)
    };
    match why {
        None => Ok(()),
        Some(why) if allow_private => Err(format!(
            "{ip} is {why}: web_fetch never connects to it, even with web_fetch_private"
        )),
        Some(why) => Err(format!(
            "{ip} is {why}: web_fetch does not connect to it unless private addresses are allowed \
             ([tools] web_fetch_private = true)"
        )),
    }
}

/// The check a fetch makes on each address: [`check_address`], or a test's stand-in.
pub(crate) type AddressCheck = fn(IpAddr, bool) -> Result<(), String>;

/// The addresses of `host` through `resolver`, each checked by `check`: the decision the HTTP
/// client's connector makes for every name it connects to. Refused when any address is
/// (a name that also points inside the network is not used), or there is none.
pub(crate) async fn resolve_checked(
    resolver: &dyn Resolver,
    host: &str,
    allow_private: bool,
    check: AddressCheck,
) -> Result<Vec<IpAddr>, String> {
    let addresses = resolver
        .lookup(host)
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    if addresses.is_empty() {
        return Err(format!("{host} has no address"));
    }
    for ip in &addresses {
        check(*ip, allow_private).map_err(|e| format!("{host} resolves to {ip}, and {e}"))?;
    }
    Ok(addresses)
}

/// The addresses of `host` through `resolver`, checked as `web_fetch` checks them before it
/// connects: `Err` names the address refused and why. The decision itself, for a test with a
/// resolver stub or an embedder that wants to know before it asks.
pub async fn checked_addresses(
    resolver: &dyn Resolver,
    host: &str,
    allow_private: bool,
) -> Result<Vec<IpAddr>, String> {
    resolve_checked(resolver, host, allow_private, check_address).await
}

/// A refusal by the connector, carried through the HTTP client's error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

/// The HTTP client's resolver: [`resolve_checked`] over the configured [`Resolver`].
#[derive(Debug)]
pub(crate) struct CheckedDns {
    pub(crate) resolver: Arc<dyn Resolver>,
    pub(crate) allow_private: bool,
    pub(crate) check: AddressCheck,
}

impl reqwest::dns::Resolve for CheckedDns {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let resolver = self.resolver.clone();
        let (allow_private, check) = (self.allow_private, self.check);
        Box::pin(async move {
            let host = name.as_str().to_owned();
            match resolve_checked(&*resolver, &host, allow_private, check).await {
                Ok(ips) => {
                    let addrs: reqwest::dns::Addrs = Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
                    Ok(addrs)
                }
                Err(e) => Err(Box::new(Refused(e)) as Box<dyn std::error::Error + Send + Sync>),
            }
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A resolver that knows only the names it was given.
    #[derive(Debug, Default)]
    pub(crate) struct Names(pub(crate) HashMap<String, Vec<IpAddr>>);

    #[async_trait]
    impl Resolver for Names {
        async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
            self.0
                .get(host)
                .cloned()
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, host.to_owned()))
        }
    }

    #[test]
    fn addresses_inside_the_network_are_refused_and_public_ones_pass() {
        for refused in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.1.1",
            "0.0.0.0",
            "100.64.0.1",
            "100.127.255.254",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "febf::1",
            "fc00::1",
            "fd12:3456::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "ff02::1",
        ] {
            let ip: IpAddr = refused.parse().unwrap();
            let e = check_address(ip, false).unwrap_err();
            assert!(e.starts_with(&ip.to_string()), "{e}");
        }
        for public in [
            "93.184.216.34",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
            "fec0::1",
        ] {
            assert_eq!(check_address(public.parse().unwrap(), false), Ok(()), "{public}");
        }
    }

    #[test]
    fn allowing_private_addresses_never_allows_the_metadata_address() {
        assert_eq!(check_address("127.0.0.1".parse().unwrap(), true), Ok(()));
        assert_eq!(check_address("10.1.1.1".parse().unwrap(), true), Ok(()));
        for metadata in ["169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254"] {
            let e = check_address(metadata.parse().unwrap(), true).unwrap_err();
            assert!(e.contains("cloud metadata"), "{e}");
        }
    }
}
