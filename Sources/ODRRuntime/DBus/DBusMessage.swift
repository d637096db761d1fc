/// The few D-Bus messages the runtime writes and reads (the D-Bus specification's wire format):
/// NetworkManager's `Metered` property (``NetworkManagerBusProbe``) and Avahi's DNS-SD calls and
/// signals (``PeerDiscovery``). Only the types those use are known; anything else is refused.
package struct DBusMessage {
    static let methodCallType: UInt8 = 1
    package static let methodReturn: UInt8 = 2
    package static let error: UInt8 = 3
    package static let signal: UInt8 = 4
    /// The most bytes a message's header fields or body may take here: NetworkManager's answers
    /// take well under 200, Avahi's resolved services (a TXT record of at most 64 KiB aside) under 1 KiB.
    static let maximumPart = 64 << 10

    var type: UInt8
    var replySerial: UInt32?
    var signature = ""
    /// The object path (a signal's sender object), interface, member, error name and sender (a
    /// name the bus sets: the bus's own signals come from `org.freedesktop.DBus`), when present.
    var path: String?
    var interface: String?
    var member: String?
    var errorName: String?
    var sender: String?
    var body: [UInt8] = []
    var bigEndian = false

    /// A header field's or an argument's value.
    package enum Value {
        case string(String), objectPath(String), signature(String), int32(Int32), uint16(UInt16), uint32(UInt32)
        /// A variant holding a `u`.
        case variantUInt32(UInt32)
        /// An array of byte arrays (`aay`, as a DNS-SD TXT record).
        case byteArrays([[UInt8]])
    }

    /// A method call.
    static func methodCall(serial: UInt32, path: String, interface: String, member: String, destination: String,
                           arguments: [Value]) -> [UInt8] {
        var fields: [(UInt8, Value)] = [(1, .objectPath(path)), (2, .string(interface)), (3, .string(member)), (6, .string(destination))]
        if !arguments.isEmpty { fields.append((8, .signature(arguments.map(\.signature).joined()))) }
        return encode(type: methodCallType, flags: 0, serial: serial, fields: fields, body: arguments)
    }

    /// A little-endian message.
    package static func encode(type: UInt8, flags: UInt8, serial: UInt32, fields: [(UInt8, Value)], body: [Value]) -> [UInt8] {
        var bodyBytes = Writer()
        for value in body { bodyBytes.append(value) }
        // The fields start at offset 16, a multiple of 8, so aligning within them aligns in the message.
        var fieldBytes = Writer()
        for (code, value) in fields {
            fieldBytes.align(8)
            fieldBytes.bytes.append(code)
            fieldBytes.append(.signature(value.signature))
            fieldBytes.append(value)
        }
        var message = Writer()
        message.bytes += [UInt8(ascii: "l"), type, flags, 1]
        message.uint32(UInt32(bodyBytes.bytes.count))
        message.uint32(serial)
        message.uint32(UInt32(fieldBytes.bytes.count))
        message.bytes += fieldBytes.bytes
        message.align(8)
        return message.bytes + bodyBytes.bytes
    }

    /// Reads one message; `nil` when the connection ends or the bytes are not a message this
    /// reader accepts (an endianness flag other than `l`/`B`, a part over ``maximumPart``, a header
    /// field it cannot skip).
    static func read(from connection: some BusByteSource) -> DBusMessage? {
        guard let head = connection.read(16), head[0] == UInt8(ascii: "l") || head[0] == UInt8(ascii: "B") else { return nil }
        var header = Reader(bytes: head, bigEndian: head[0] == UInt8(ascii: "B"))
        header.position = 4
        guard let bodyLength = header.uint32(), header.uint32() != nil, let fieldsLength = header.uint32(),
              bodyLength <= maximumPart, fieldsLength <= maximumPart else { return nil }
        // Both at most 64 KiB, so the sum cannot overflow.
        let paddedFields = (Int(fieldsLength) + 7) / 8 * 8
        guard let rest = connection.read(paddedFields + Int(bodyLength)) else { return nil }
        var message = DBusMessage(type: head[1], bigEndian: header.bigEndian)
        var fields = Reader(bytes: Array(rest[0..<Int(fieldsLength)]), bigEndian: header.bigEndian)
        while !fields.atEnd {
            guard fields.align(8), let code = fields.byte(), let signature = fields.signature() else { return nil }
            switch signature {
            case "s", "o":
                guard let value = fields.string() else { return nil }
                switch code {
                case 1: message.path = value
                case 2: message.interface = value
                case 3: message.member = value
                case 4: message.errorName = value
                case 7: message.sender = value
                default: break
                }
            case "g":
                guard let value = fields.signature() else { return nil }
                if code == 8 { message.signature = value }
            case "u":
                guard let value = fields.uint32() else { return nil }
                if code == 5 { message.replySerial = value }
            default:
                return nil
            }
        }
        message.body = Array(rest[paddedFields...])
        return message
    }

    /// The body's `v` when it holds a `u`.
    func variantUInt32() -> UInt32? {
        var reader = Reader(bytes: body, bigEndian: bigEndian)
        guard reader.signature() == "u" else { return nil }
        return reader.uint32()
    }

    /// A reader of the body's arguments.
    var arguments: Reader { Reader(bytes: body, bigEndian: bigEndian) }

    /// Appends values with D-Bus alignment (little-endian).
    struct Writer {
        var bytes: [UInt8] = []

        mutating func align(_ boundary: Int) {
            while bytes.count % boundary != 0 { bytes.append(0) }
        }

        mutating func uint32(_ value: UInt32) {
            align(4)
            withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
        }

        mutating func append(_ value: Value) {
            switch value {
            case .string(let text), .objectPath(let text):
                let utf8 = Array(text.utf8)
                uint32(UInt32(utf8.count))
                bytes += utf8 + [0]
            case .signature(let text):
                let utf8 = Array(text.utf8)
                bytes += [UInt8(utf8.count)] + utf8 + [0]
            case .uint32(let number):
                uint32(number)
            case .int32(let number):
                uint32(UInt32(bitPattern: number))
            case .uint16(let number):
                align(2)
                withUnsafeBytes(of: number.littleEndian) { bytes += $0 }
            case .variantUInt32(let number):
                append(.signature("u"))
                uint32(number)
            case .byteArrays(let arrays):
                // The outer length counts the elements' bytes and the padding between them, not
                // after the last (elements are 4-aligned, as the length is, so none comes first).
                uint32(0)
                let lengthAt = bytes.count - 4
                for array in arrays {
                    uint32(UInt32(array.count))
                    bytes += array
                }
                let length = UInt32(bytes.count - lengthAt - 4)
                withUnsafeBytes(of: length.littleEndian) { bytes.replaceSubrange(lengthAt..<(lengthAt + 4), with: $0) }
            }
        }
    }

    /// Reads values with D-Bus alignment; every read checks the bytes left.
    struct Reader {
        let bytes: [UInt8]
        let bigEndian: Bool
        var position = 0

        var atEnd: Bool { position >= bytes.count }

        mutating func align(_ boundary: Int) -> Bool {
            let aligned = (position + boundary - 1) / boundary * boundary
            guard aligned <= bytes.count else { return false }
            position = aligned
            return true
        }

        mutating func byte() -> UInt8? {
            guard position < bytes.count else { return nil }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func uint32() -> UInt32? {
            guard align(4), bytes.count - position >= 4 else { return nil }
            let value = bytes[position..<(position + 4)].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            position += 4
            return bigEndian ? value.byteSwapped : value
        }

        /// `count` bytes and the NUL after them, as text.
        private mutating func text(_ count: Int) -> String? {
            guard count >= 0, bytes.count - position > count, bytes[position + count] == 0 else { return nil }
            defer { position += count + 1 }
            return String(decoding: bytes[position..<(position + count)], as: UTF8.self)
        }

        mutating func int32() -> Int32? { uint32().map { Int32(bitPattern: $0) } }

        mutating func uint16() -> UInt16? {
            guard align(2), bytes.count - position >= 2 else { return nil }
            let value = UInt16(bytes[position]) | UInt16(bytes[position + 1]) << 8
            position += 2
            return bigEndian ? value.byteSwapped : value
        }

        /// An `aay`: at most `maximumCount` arrays, each checked against the bytes left.
        mutating func byteArrays(maximumCount: Int = 256) -> [[UInt8]]? {
            guard let length = uint32(), bytes.count - position >= Int(length) else { return nil }
            let end = position + Int(length)
            var arrays: [[UInt8]] = []
            while position < end {
                guard arrays.count < maximumCount, let count = uint32(), end - position >= Int(count) else { return nil }
                arrays.append(Array(bytes[position..<(position + Int(count))]))
                position += Int(count)
            }
            return position == end ? arrays : nil
        }

        mutating func string() -> String? {
            guard let length = uint32() else { return nil }
            return text(Int(length))
        }

        mutating func signature() -> String? {
            guard let length = byte() else { return nil }
            return text(Int(length))
        }
    }
}

extension DBusMessage.Value {
    /// Its D-Bus type signature.
    var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .uint32: "u"
        case .int32: "i"
        case .uint16: "q"
        case .variantUInt32: "v"
        case .byteArrays: "aay"
        }
    }
}
