import JWS

/// Every member name Apple documents for AAK and SKAN postbacks, so parsing reuses one string per name.
enum PostbackKeys {
    /// The documented member names.
    static let documented: Set<String> = [
        "jws-string", "ad-interaction-type", "conversion-value", "coarse-conversion-value", "country-code",
        "impression-type", "ad-network-identifier", "source-identifier", "advertised-item-identifier", "conversion-type",
        "postback-identifier", "did-win", "postback-sequence-index", "publisher-item-identifier", "marketplace-identifier",
        "version", "ad-network-id", "campaign-id", "app-id", "transaction-id", "attribution-signature", "redownload",
        "source-app-id", "source-domain", "fidelity-type",
    ]
    static let table = JSONKeyTable(documented.sorted())
}
