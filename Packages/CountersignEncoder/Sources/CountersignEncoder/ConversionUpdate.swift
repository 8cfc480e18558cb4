/// What to tell Apple for one window: the values and whether to lock the window.
public struct ConversionUpdate: Sendable, Equatable {
    /// The window (0, 1, 2) the update is for.
    public var window: Int
    /// The fine value 0-63 (Apple reports it in window 0 only); nil when the schema defines none that fits.
    public var fine: Int?
    /// The coarse value; nil before SKAdNetwork 4.0 or when the schema defines none that fits.
    public var coarse: EncodingSchema.CoarseValue?
    /// Whether to lock the window, so Apple sends its postback without waiting for the window's end.
    public var lock: Bool

    /// An update.
    public init(window: Int, fine: Int?, coarse: EncodingSchema.CoarseValue?, lock: Bool) {
        self.window = window
        self.fine = fine
        self.coarse = coarse
        self.lock = lock
    }
}
