//! The client's address: the socket peer, unless the peer is a trusted proxy, in
//! which case the right-most address of the one header the operator chose
//! (`X-Forwarded-For` or `Forwarded`) that is not itself a trusted proxy. A header
//! from an untrusted peer changes nothing.

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

/// Which header the trusted proxy sets; the other one is ignored, so a client cannot
/// slip a forged address in through the header the proxy does not rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For: client, proxy1, …` (nginx, HAProxy, Traefik, Caddy).
    #[default]
    XForwardedFor,
    /// RFC 7239 `Forwarded: for=client, for=proxy1`.
    Forwarded,
}

impl ForwardedHeader {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "x-forwarded-for" => Ok(Self::XForwardedFor),
            "forwarded" => Ok(Self::Forwarded),
            _ => Err("x-forwarded-for or forwarded".into()),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::XForwardedFor => "x-forwarded-for",
            Self::Forwarded => "forwarded",
        }
    }
}

/// One `for=` value of RFC 7239 §5.2 (quoted, bracketed IPv6, optional port).
fn forwarded_for(v: &str) -> Option<IpAddr> {
    let v = v.trim().trim_matches('"');
    let v = v.strip_prefix('[').and_then(|x| x.split(']').next()).unwrap_or(v);
    let v = if v.matches(':').count() == 1 {
        v.split(':').next().unwrap_or(v)
    } else {
        v
    };
    v.parse().ok()
}

/// The addresses the header's lines name, in order. RFC 9110 §5.3: several lines of a
/// list header are one list, so a proxy that appends a line of its own (HAProxy) is
/// read as if it had extended the first. An entry that is not an address (`unknown`,
/// an obfuscated identifier) stands in the chain as `None`: nothing left of it can be
/// believed.
fn chain<'a>(header: ForwardedHeader, lines: impl Iterator<Item = &'a str>) -> Vec<Option<IpAddr>> {
    let mut out = Vec::new();
    for line in lines {
        for element in line.split(',') {
            let ip = match header {
                // Some proxies write `ip:port` or `[v6]:port` here too.
                ForwardedHeader::XForwardedFor => forwarded_for(element),
                ForwardedHeader::Forwarded => element
                    .split(';')
                    .filter_map(|pair| pair.trim().split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("for"))
                    .and_then(|(_, v)| forwarded_for(v)),
            };
            out.push(ip);
        }
    }
    out
}

/// The address to rate-limit and log for a request: walking the chain from the right
/// (the hop nearest to us), the first address that is not a trusted proxy.
pub fn client_ip<'a>(
    peer: IpAddr,
    header: ForwardedHeader,
    lines: impl Iterator<Item = &'a str>,
    trusted: &[Cidr],
) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let mut last = peer;
    for hop in chain(header, lines).into_iter().rev() {
        match hop {
            Some(ip) if is_trusted(ip) => last = ip,
            Some(ip) => return ip,
            // An entry we cannot read: the last trusted hop is all we know.
            None => return last,
        }
    }
    last
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

    fn xff(peer: &str, lines: &[&str], trusted: &[Cidr]) -> IpAddr {
        client_ip(ip(peer), ForwardedHeader::XForwardedFor, lines.iter().copied(), trusted)
    }

    fn fwd(peer: &str, lines: &[&str], trusted: &[Cidr]) -> IpAddr {
        client_ip(ip(peer), ForwardedHeader::Forwarded, lines.iter().copied(), trusted)
    }

    #[test]
    fn a_spoofed_header_from_an_untrusted_peer_changes_nothing() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        assert_eq!(xff("203.0.113.9", &["1.2.3.4"], &trusted), ip("203.0.113.9"));
    }

    #[test]
    fn behind_a_trusted_proxy_the_right_most_untrusted_hop_wins() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        // The client forged the first entry; the proxy appended the real address.
        assert_eq!(
            xff("10.0.0.1", &["6.6.6.6, 198.51.100.7, 10.0.0.2"], &trusted),
            ip("198.51.100.7")
        );
        assert_eq!(
            fwd(
                "10.0.0.1",
                &[r#"for=6.6.6.6, for="198.51.100.8:4711";proto=https"#],
                &trusted
            ),
            ip("198.51.100.8")
        );
        assert_eq!(
            fwd("10.0.0.1", &[r#"for="[2001:db8::1]:80""#], &trusted),
            ip("2001:db8::1")
        );
        assert_eq!(xff("10.0.0.1", &[], &trusted), ip("10.0.0.1"));
    }

    #[test]
    fn every_line_of_the_header_is_read_and_the_last_line_is_nearest() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        // The client sent the first line; HAProxy appended the second.
        assert_eq!(
            xff("10.0.0.1", &["6.6.6.6", "198.51.100.7"], &trusted),
            ip("198.51.100.7")
        );
    }

    #[test]
    fn only_the_chosen_header_counts() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        // A client-sent `Forwarded` names nothing when the proxy sets X-Forwarded-For:
        // the chain read is the X-Forwarded-For one, which the caller passes.
        assert_eq!(
            client_ip(
                ip("10.0.0.1"),
                ForwardedHeader::XForwardedFor,
                ["for=6.6.6.6"].into_iter(),
                &trusted
            ),
            ip("10.0.0.1")
        );
        assert_eq!(ForwardedHeader::parse("Forwarded"), Ok(ForwardedHeader::Forwarded));
        assert!(ForwardedHeader::parse("x-real-ip").is_err());
    }

    #[test]
    fn x_forwarded_for_entries_may_carry_a_port() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        assert_eq!(xff("10.0.0.1", &["198.51.100.7:5151"], &trusted), ip("198.51.100.7"));
        assert_eq!(xff("10.0.0.1", &["[2001:db8::2]:443"], &trusted), ip("2001:db8::2"));
        assert_eq!(xff("10.0.0.1", &["2001:db8::3"], &trusted), ip("2001:db8::3"));
    }

    #[test]
    fn an_unreadable_hop_stops_the_walk_at_the_last_trusted_one() {
        let trusted = [Cidr::parse("10.0.0.0/8").unwrap()];
        assert_eq!(
            xff("10.0.0.1", &["1.2.3.4, garbage, 10.0.0.9"], &trusted),
            ip("10.0.0.9")
        );
    }
}
