// DERReader: reads the ASN.1 elements of a StoreKit 1 receipt, the PKCS#7
// container and the attribute sets inside it, without trusting a byte.
//
// Every length is checked against what is left of its parent before
// anything is read, nesting deeper than `maximumDepth` is refused, and so
// are tags of more than one byte (no receipt has one). Definite lengths are
// read as DER; an indefinite length (BER, which Xcode's StoreKit testing
// receipts use for the container) is read to its end-of-contents marker,
// as deep as the depth limit allows. Pure; throws `DERError` with the
// offset at fault.

/// Why bytes are not the ASN.1 a receipt holds.
struct DERError: Error, Equatable, CustomStringConvertible {
    var offset: Int
    var problem: String

    var description: String { "\(problem) at byte \(offset)" }
}

/// One element: its tag byte and where its contents are in the buffer.
struct DERElement: Equatable {
    /// Where the element's tag is.
    var start: Int
    var tag: UInt8
    /// The contents (without the tag and length octets, and without the
    /// end-of-contents marker of an indefinite length).
    var contents: Range<Int>
    /// Where the next element starts.
    var end: Int

    var isConstructed: Bool { tag & 0x20 != 0 }

    static let integer: UInt8 = 0x02
    static let octetString: UInt8 = 0x04
    static let constructedOctetString: UInt8 = 0x24
    static let objectIdentifier: UInt8 = 0x06
    static let utf8String: UInt8 = 0x0C
    static let ia5String: UInt8 = 0x16
    static let sequence: UInt8 = 0x30
    static let set: UInt8 = 0x31
    /// `[0]`, constructed: PKCS#7's explicit tag around the content.
    static let contextZero: UInt8 = 0xA0
}

/// Reads elements from one buffer.
struct DERReader {
    /// Deeper nesting is refused: a receipt's deepest element is at about
    /// ten, and each level of an indefinite length is a recursion.
    static let maximumDepth = 24

    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The element that starts at `offset` and must end by `limit`.
    func element(at offset: Int, limit: Int, depth: Int = 0) throws(DERError) -> DERElement {
        guard depth <= DERReader.maximumDepth else {
            throw DERError(offset: offset, problem: "nesting deeper than \(DERReader.maximumDepth) levels")
        }
        guard offset < limit else { throw DERError(offset: offset, problem: "an element is missing") }
        let tag = bytes[offset]
        guard tag & 0x1F != 0x1F else { throw DERError(offset: offset, problem: "a tag of more than one byte") }
        guard offset + 1 < limit else { throw DERError(offset: offset, problem: "the length is missing") }
        let first = bytes[offset + 1]
        var start = offset + 2
        if first == 0x80 {
            guard tag & 0x20 != 0 else {
                throw DERError(offset: offset, problem: "an indefinite length on a primitive element")
            }
            // Children up to the end-of-contents marker (two zero bytes).
            var position = start
            while true {
                guard position + 1 < limit else { throw DERError(offset: position, problem: "no end-of-contents marker") }
                if bytes[position] == 0, bytes[position + 1] == 0 {
                    return DERElement(start: offset, tag: tag, contents: start..<position, end: position + 2)
                }
                position = try element(at: position, limit: limit, depth: depth + 1).end
            }
        }
        var length = Int(first)
        if first & 0x80 != 0 {
            let count = Int(first & 0x7F)
            guard count <= 4 else { throw DERError(offset: offset, problem: "a length of \(count) bytes") }
            guard start + count <= limit else { throw DERError(offset: offset, problem: "the length runs past the end") }
            length = 0
            for index in 0..<count { length = length << 8 | Int(bytes[start + index]) }
            start += count
        }
        guard length <= limit - start else {
            throw DERError(offset: offset, problem: "a length of \(length) bytes where \(limit - start) are left")
        }
        return DERElement(start: offset, tag: tag, contents: start..<(start + length), end: start + length)
    }

    /// The element at `offset`, which must carry `tag`.
    func element(_ tag: UInt8, at offset: Int, limit: Int, depth: Int = 0,
                 what: String) throws(DERError) -> DERElement {
        let element = try element(at: offset, limit: limit, depth: depth)
        guard element.tag == tag else {
            throw DERError(offset: offset, problem: "\(what) has tag 0x\(String(tag: element.tag)), "
                           + "not 0x\(String(tag: tag))")
        }
        return element
    }

    /// The children of a constructed element.
    func children(of parent: DERElement, depth: Int = 0) throws(DERError) -> [DERElement] {
        var children: [DERElement] = []
        var position = parent.contents.lowerBound
        while position < parent.contents.upperBound {
            let child = try element(at: position, limit: parent.contents.upperBound, depth: depth + 1)
            children.append(child)
            position = child.end
        }
        return children
    }

    /// The bytes of an OCTET STRING, primitive or (BER) constructed of
    /// primitive chunks.
    func octets(of element: DERElement, depth: Int = 0) throws(DERError) -> [UInt8] {
        switch element.tag {
        case DERElement.octetString:
            return Array(bytes[element.contents])
        case DERElement.constructedOctetString:
            var octets: [UInt8] = []
            for chunk in try children(of: element, depth: depth) {
                octets += try self.octets(of: chunk, depth: depth + 1)
            }
            return octets
        default:
            throw DERError(offset: element.contents.lowerBound,
                           problem: "tag 0x\(String(tag: element.tag)) where an OCTET STRING belongs")
        }
    }

    /// A non-negative INTEGER that fits in 63 bits.
    func integer(of element: DERElement) throws(DERError) -> Int64 {
        guard element.tag == DERElement.integer else {
            throw DERError(offset: element.contents.lowerBound, problem: "tag 0x\(String(tag: element.tag)), not an INTEGER")
        }
        let contents = bytes[element.contents]
        guard let first = contents.first, first & 0x80 == 0 else {
            throw DERError(offset: element.contents.lowerBound, problem: "an empty or negative INTEGER")
        }
        let significant = contents.drop { $0 == 0 }
        guard significant.count <= 8, significant.count < 8 || significant.first! & 0x80 == 0 else {
            throw DERError(offset: element.contents.lowerBound, problem: "an INTEGER too large for 63 bits")
        }
        return significant.reduce(0) { $0 << 8 | Int64($1) }
    }
}

private extension String {
    /// A tag byte in two hex digits.
    init(tag: UInt8) {
        let digits = Array("0123456789ABCDEF".utf8)
        self = String(decoding: [digits[Int(tag >> 4)], digits[Int(tag & 0xF)]], as: UTF8.self)
    }
}
