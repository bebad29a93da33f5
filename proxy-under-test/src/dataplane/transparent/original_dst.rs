//! The original destination of a redirected connection: `getsockopt(SO_ORIGINAL_DST)` (IPv4) or
//! `getsockopt(IP6T_SO_ORIGINAL_DST)` (IPv6), which the kernel answers from the connection's
//! conntrack entry after an iptables `nat` `REDIRECT`. Safe wrappers from nix only.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use nix::libc;
use nix::sys::socket::{getsockopt, sockopt};
use tokio::net::TcpStream;

/// Where the client of `tcp` meant to connect before the redirect. The address family follows
/// the accepted socket's. Errors are the OS's (e.g. `ENOENT` without a conntrack entry); for a
/// connection that was not redirected but is tracked, the kernel answers the socket's own local
/// address, which the caller refuses as "the listener itself".
pub(crate) fn lookup(tcp: &TcpStream) -> io::Result<SocketAddr> {
    match tcp.local_addr()? {
        SocketAddr::V4(_) => getsockopt(tcp, sockopt::OriginalDst)
            .map(|a| SocketAddr::V4(from_v4(&a)))
            .map_err(io::Error::from),
        SocketAddr::V6(_) => getsockopt(tcp, sockopt::Ip6tOriginalDst)
            .map(|a| SocketAddr::V6(from_v6(&a)))
            .map_err(io::Error::from),
    }
}

/// `sockaddr_in` fields are in network byte order.
fn from_v4(a: &libc::sockaddr_in) -> SocketAddrV4 {
    SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
        u16::from_be(a.sin_port),
    )
}

fn from_v6(a: &libc::sockaddr_in6) -> SocketAddrV6 {
    SocketAddrV6::new(
        Ipv6Addr::from(a.sin6_addr.s6_addr),
        u16::from_be(a.sin6_port),
        u32::from_be(a.sin6_flowinfo),
        a.sin6_scope_id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_convert_from_network_byte_order() {
        let mut v4: libc::sockaddr_in = zero_v4();
        v4.sin_port = 15001u16.to_be();
        v4.sin_addr.s_addr = u32::from(Ipv4Addr::new(240, 0, 0, 1)).to_be();
        assert_eq!(from_v4(&v4).to_string(), "240.0.0.1:15001");
        let mut v6: libc::sockaddr_in6 = zero_v6();
        v6.sin6_port = 8080u16.to_be();
        v6.sin6_addr.s6_addr = "fd00::7".parse::<Ipv6Addr>().unwrap().octets();
        assert_eq!(from_v6(&v6).to_string(), "[fd00::7]:8080");
    }

    fn zero_v4() -> libc::sockaddr_in {
        libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: 0 },
            sin_zero: [0; 8],
        }
    }

    fn zero_v6() -> libc::sockaddr_in6 {
        libc::sockaddr_in6 {
            sin6_family: libc::AF_INET6 as libc::sa_family_t,
            sin6_port: 0,
            sin6_flowinfo: 0,
            sin6_addr: libc::in6_addr { s6_addr: [0; 16] },
            sin6_scope_id: 0,
        }
    }

    /// The real call on a connection nothing redirected: with no conntrack entry the kernel
    /// answers an error (`ENOENT`, or `ENOPROTOOPT` without the nat modules); with one (the nat
    /// modules loaded) it answers the socket's own local address. Never a panic, never another
    /// address. On the development machine (no conntrack) the answer is `ENOENT`.
    #[tokio::test]
    async fn so_original_dst_on_a_plain_socket_is_an_error_or_the_local_address() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), l.accept());
        let (_client, (server, _)) = (client.unwrap(), accepted.unwrap());
        match lookup(&server) {
            Ok(dst) => assert_eq!(dst, server.local_addr().unwrap()),
            Err(e) => assert!(e.raw_os_error().is_some(), "an OS error: {e}"),
        }
    }
}
