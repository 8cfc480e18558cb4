import COpenSSL
import Synchronization

/// ECDSA P-256 verification against one public key, with OpenSSL's fixed-base table built for that key.
///
/// An ECDSA verify computes u1·G + u2·Q. OpenSSL's own verify has a precomputed table for the generator G
/// but multiplies the key Q from scratch on every call, which is most of its cost. Countersign verifies
/// every postback against the same few pinned keys, so for each one it builds OpenSSL's table of
/// multiples (an `EC_GROUP` whose generator is Q, `EC_GROUP_precompute_mult`) once, about 25 ms and
/// 150 KB, and both products become fixed-base multiplications: a verify takes about 40% of the time.
/// Every other step is OpenSSL's `ossl_ecdsa_simple_verify_sig`, line for line, done with OpenSSL's
/// `BN_` and `EC_POINT_` functions. The Wycheproof suites run through this path and the ordinary one.
final class P256KeyTable: @unchecked Sendable {
    private let curveGroup: OpaquePointer
    private let keyGroup: OpaquePointer
    private let scratchPool = Mutex<[Scratch]>([])

    /// Builds the table for the EC key `pkey`, or returns nil when it is not on P-256 or OpenSSL cannot build it.
    init?(publicKey pkey: OpaquePointer) {
        guard let curveGroup = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { return nil }
        guard let keyGroup = Self.keyGroup(for: pkey, on: curveGroup) else {
            EC_GROUP_free(curveGroup)
            ERR_clear_error()
            return nil
        }
        self.curveGroup = curveGroup
        self.keyGroup = keyGroup
    }

    /// A copy of `curveGroup` whose generator is the key's point, with its table of multiples built.
    private static func keyGroup(for pkey: OpaquePointer, on curveGroup: OpaquePointer) -> OpaquePointer? {
        var encoded = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_PUB_KEY, &encoded, encoded.count, &length) == 1,
              let context = BN_CTX_new()
        else { return nil }
        defer { BN_CTX_free(context) }
        guard let point = EC_POINT_new(curveGroup) else { return nil }
        defer { EC_POINT_free(point) }
        guard EC_POINT_oct2point(curveGroup, point, encoded, length, context) == 1,
              EC_POINT_is_at_infinity(curveGroup, point) == 0,
              let keyGroup = EC_GROUP_dup(curveGroup)
        else { return nil }
        guard EC_GROUP_set_generator(keyGroup, point, EC_GROUP_get0_order(curveGroup), BN_value_one()) == 1,
              countersign_precompute_generator_multiples(keyGroup, context) == 1
        else {
            EC_GROUP_free(keyGroup)
            return nil
        }
        return keyGroup
    }

    deinit {
        scratchPool.withLock { pool in pool.forEach { $0.free() } }
        EC_GROUP_free(keyGroup)
        EC_GROUP_free(curveGroup)
    }

    /// Verifies a raw `r || s` signature (64 bytes) over a SHA-256 digest.
    func verify(rawSignature: [UInt8], digest: [UInt8]) -> Bool {
        guard rawSignature.count == 64 else { return false }
        return withScratch { scratch in
            rawSignature.withUnsafeBufferPointer { raw in
                guard BN_bin2bn(raw.baseAddress, 32, scratch.r) != nil, BN_bin2bn(raw.baseAddress! + 32, 32, scratch.s) != nil else { return false }
                return verify(r: scratch.r, s: scratch.s, digest: digest, scratch: scratch)
            }
        }
    }

    /// Verifies a DER signature over a SHA-256 digest; like OpenSSL, only the one canonical DER encoding is accepted.
    func verify(derSignature: [UInt8], digest: [UInt8]) -> Bool {
        derSignature.withUnsafeBufferPointer { der -> Bool in
            var cursor = der.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, der.count) else {
                ERR_clear_error()
                return false
            }
            defer { ECDSA_SIG_free(signature) }
            var reencoded: UnsafeMutablePointer<UInt8>?
            let length = i2d_ECDSA_SIG(signature, &reencoded)
            guard let reencoded else { return false }
            defer { CRYPTO_free(reencoded, #fileID, #line) }
            guard Int(length) == der.count, let input = der.baseAddress, memcmp(reencoded, input, der.count) == 0 else { return false }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(signature, &r, &s)
            guard let r, let s else { return false }
            return withScratch { scratch in verify(r: r, s: s, digest: digest, scratch: scratch) }
        }
    }

    /// `ossl_ecdsa_simple_verify_sig` with u1·G and u2·Q each taken from a fixed-base table.
    private func verify(r: OpaquePointer, s: OpaquePointer, digest: [UInt8], scratch: Scratch) -> Bool {
        guard digest.count == 32, let order = EC_GROUP_get0_order(curveGroup) else { return false }
        guard BN_is_zero(r) == 0, BN_is_negative(r) == 0, BN_ucmp(r, order) < 0,
              BN_is_zero(s) == 0, BN_is_negative(s) == 0, BN_ucmp(s, order) < 0
        else { return false }
        let context = scratch.context
        let computed = BN_mod_inverse(scratch.w, s, order, context) != nil
            && BN_bin2bn(digest, 32, scratch.m) != nil
            && BN_mod_mul(scratch.u1, scratch.m, scratch.w, order, context) == 1
            && BN_mod_mul(scratch.u2, r, scratch.w, order, context) == 1
            && EC_POINT_mul(curveGroup, scratch.generatorProduct, scratch.u1, nil, nil, context) == 1
            && EC_POINT_mul(keyGroup, scratch.keyProduct, scratch.u2, nil, nil, context) == 1
            && EC_POINT_add(curveGroup, scratch.generatorProduct, scratch.generatorProduct, scratch.keyProduct, context) == 1
            && EC_POINT_get_affine_coordinates(curveGroup, scratch.generatorProduct, scratch.x, nil, context) == 1
            && BN_nnmod(scratch.x, scratch.x, order, context) == 1
        guard computed else {
            ERR_clear_error()
            return false
        }
        return BN_ucmp(scratch.x, r) == 0
    }

    private func withScratch(_ body: (Scratch) -> Bool) -> Bool {
        let scratch = scratchPool.withLock { $0.popLast() } ?? Scratch(group: curveGroup)
        guard let scratch else { return false }
        let result = body(scratch)
        scratchPool.withLock { $0.append(scratch) }
        return result
    }
}

/// One verifier's working values; the pool hands each to one caller at a time.
private struct Scratch: @unchecked Sendable {
    let context: OpaquePointer
    let r: OpaquePointer
    let s: OpaquePointer
    let m: OpaquePointer
    let w: OpaquePointer
    let u1: OpaquePointer
    let u2: OpaquePointer
    let x: OpaquePointer
    let generatorProduct: OpaquePointer
    let keyProduct: OpaquePointer

    init?(group: OpaquePointer) {
        guard let context = BN_CTX_new() else { return nil }
        let numbers = (0..<7).compactMap { _ in BN_new() }
        let points = (0..<2).compactMap { _ in EC_POINT_new(group) }
        guard numbers.count == 7, points.count == 2 else {
            BN_CTX_free(context)
            numbers.forEach { BN_free($0) }
            points.forEach { EC_POINT_free($0) }
            return nil
        }
        self.context = context
        (r, s, m, w) = (numbers[0], numbers[1], numbers[2], numbers[3])
        (u1, u2, x) = (numbers[4], numbers[5], numbers[6])
        (generatorProduct, keyProduct) = (points[0], points[1])
    }

    func free() {
        BN_CTX_free(context)
        [r, s, m, w, u1, u2, x].forEach { BN_free($0) }
        [generatorProduct, keyProduct].forEach { EC_POINT_free($0) }
    }
}
