//! The client's address: the socket peer, unless the peer is a trusted proxy, in
//! which case the right-most address in `X-Forwarded-For` / `Forwarded` that is not
//! itself a trusted proxy. A header from an untrusted peer changes nothing.

use std::net::IpAddr;

/// An address range like `10.0.0.0/8` or `::1/128`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let network: IpAddr = addr
            .parse()
            .map_err(|_| format!("`{s}` is not an IP address or CIDR range"))?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{s}` has a bad prefix"))?,
            None => max,
        };
        Ok(Self { network, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => mask_eq(&n.octets(), &a.octets(), self.prefix),
            (IpAddr::V6(n), IpAddr::V6(a)) => mask_eq(&n.octets(), &a.octets(), self.prefix),
            (IpAddr::V6(n), IpAddr::V4(a)) => mask_eq(&n.octets(), &a.to_ipv6_mapped().octets(), self.prefix),
            (IpAddr::V4(_), IpAddr::V6(a)) => a.to_ipv4_mapped().is_some_and(|a| self.contains(IpAddr::V4(a))),
        }
    }
}

fn mask_eq(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let full = usize::from(prefix / 8);
    let rest = prefix % 8;
    if a[..full] != b[..full] {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    a[full] & mask == b[full] & mask
}

/// Addresses named by `X-Forwarded-For` and `Forwarded: for=` (RFC 7239), in order.
fn forwarded_chain(xff: Option<&str>, forwarded: Option<&str>) -> Vec<IpAddr> {
    let mut chain = Vec::new();
    if let Some(f) = forwarded {
        for element in f.split(',') {
            for pair in element.split(';') {
                if let Some((k, v)) = pair.trim().split_once('=') {
                    if k.trim().eq_ignore_ascii_case("for") {
                        let v = v.trim().trim_matches('"');
                        let v = v.strip_prefix('[').and_then(|x| x.split(']').next()).unwrap_or(v);
                        let v = if v.matches(':').count() == 1 {
                            v.split(':').next().unwrap_or(v)
                        } else {
                            v
                        };
                        if let Ok(ip) = v.parse() {
                            chain.push(ip);
                        }
                    }
                }
            }
        }
    } else if let Some(x) = xff {
        chain.extend(x.split(',').filter_map(|p| p.trim().parse::<IpAddr>().ok()));
    }
    chain
}

/// The address to rate-limit and log for a request.
pub fn client_ip(peer: IpAddr, xff: Option<&str>, forwarded: Option<&str>, trusted: &[Cidr]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    forwarded_chain(xff, forwarded)
        .into_iter()
        .rev()
        .find(|ip| !is_trusted(*ip))
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ranges() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains(ip("10.1.2.3")));
        assert!(!c.contains(ip("11.0.0.1")));
        assert!(Cidr::parse("fd00::/8").unwrap().contains(ip("fd12::1")));
        assert!(Cidr::parse("127.0.0.1").unwrap().contains(ip("127.0.0.1")));
        assert!(Cidr::parse("10.0.0.0/33").is_err());
        assert!(Cidr::parse("nonsense").is_err());
    }

    #[test]
    fn a_spoofed_header_from_an_untrusted_peer_changes_nothing() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        assert_eq!(
            client_ip(ip("203.0.113.9"), Some("1.2.3.4"), None, &trusted),
            ip("203.0.113.9")
        );
    }

    #[test]
    fn behind_a_trusted_proxy_the_right_most_untrusted_hop_wins() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        // The client forged the first entry; the proxy appended the real address.
        let xff = Some("6.6.6.6, 198.51.100.7, 10.0.0.2");
        assert_eq!(client_ip(ip("10.0.0.1"), xff, None, &trusted), ip("198.51.100.7"));
        let fwd = Some(r#"for=6.6.6.6, for="198.51.100.8:4711";proto=https"#);
        assert_eq!(client_ip(ip("10.0.0.1"), None, fwd, &trusted), ip("198.51.100.8"));
        assert_eq!(
            client_ip(ip("10.0.0.1"), None, Some(r#"for="[2001:db8::1]:80""#), &trusted),
            ip("2001:db8::1")
        );
        assert_eq!(client_ip(ip("10.0.0.1"), None, None, &trusted), ip("10.0.0.1"));
    }
}
