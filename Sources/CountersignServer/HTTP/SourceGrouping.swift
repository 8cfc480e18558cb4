import NIOCore

/// How the public routes' budgets group request sources: an IPv4 address by its first ``v4Prefix`` bits (32: each
/// address alone), an IPv6 address by its first ``v6Prefix`` bits (64: one site's subnet, so rotating addresses
/// inside one /64 is still one source). An IPv4 address mapped into IPv6 (`::ffff:a.b.c.d`) counts as IPv4.
package struct SourceGrouping: Sendable, Equatable {
    /// Bits of an IPv4 address that name its source, 8 to 32.
    package var v4Prefix = 32
    /// Bits of an IPv6 address that name its source, 16 to 128.
    package var v6Prefix = 64

    /// The source a peer belongs to: its address with the bits past the prefix cleared, and the prefix
    /// (`203.0.113.7/32`, `2001:db8:1:2::/64`); `unknown` for a peer without an IP address.
    func source(of address: SocketAddress?) -> String {
        switch address {
        case .v4(let v4)?:
            let value = UInt32(bigEndian: v4.address.sin_addr.s_addr)
            return Self.ipv4(value, prefix: v4Prefix)
        case .v6(let v6)?:
            var bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                let value = bytes[12...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                return Self.ipv4(value, prefix: v4Prefix)
            }
            for index in bytes.indices {
                let kept = max(0, min(8, v6Prefix - index * 8))
                bytes[index] &= kept == 8 ? 0xFF : ~(0xFF >> kept)
            }
            let groups = stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "/\(v6Prefix)"
        default:
            return "unknown"
        }
    }

    private static func ipv4(_ value: UInt32, prefix: Int) -> String {
        let masked = prefix == 0 ? 0 : value & ~UInt32(0) << (32 - prefix)
        return [24, 16, 8, 0].map { String(masked >> $0 & 0xFF) }.joined(separator: ".") + "/\(prefix)"
    }
}
