//! The client's address: the socket peer, unless the peer is a trusted proxy, in
//! which case the right-most address of the one header the operator chose
//! (`X-Forwarded-For` or `Forwarded`) that is not itself a trusted proxy. A header
//! from an untrusted peer changes nothing.

use std::net::IpAddr;

use crate::domain::net::{Cidr, ForwardedHeader};

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
