import ODRFormat

/// Slots counted over all clients and per client address: at most `total` at once, `perAddress`
/// from one address. A slot is held by a ``Lease`` and freed when the lease goes. The share's
/// transfers use it (a body being sent, or a response dropped unsent), and so do its connections
/// (``ConnectionLimits``).
final class AddressSlots: Sendable {
    final class Lease: Sendable {
        let slots: AddressSlots
        let address: String
        init(slots: AddressSlots, address: String) {
            self.slots = slots
            self.address = address
        }
        deinit { slots.release(address) }
    }

    private struct State {
        var active = 0
        var byAddress: [String: Int] = [:]
        var refused = 0
    }
    let total: Int
    let perAddress: Int
    private let state = Locked(State())

    init(total: Int, perAddress: Int) {
        self.total = max(1, total)
        self.perAddress = max(1, perAddress)
    }

    /// Slots held now.
    var active: Int { state.withLock { $0.active } }

    /// Slots asked for and refused since the start.
    var refused: Int { state.withLock { $0.refused } }

    /// A slot for `address`, or `nil` when every slot, or every slot of that address, is taken.
    func acquire(address: String) -> Lease? {
        let granted = state.withLock { state -> Bool in
            guard state.active < total, state.byAddress[address, default: 0] < perAddress else {
                state.refused += 1
                return false
            }
            state.active += 1
            state.byAddress[address, default: 0] += 1
            return true
        }
        return granted ? Lease(slots: self, address: address) : nil
    }

    fileprivate func release(_ address: String) {
        state.withLock { state in
            state.active -= 1
            let left = state.byAddress[address, default: 1] - 1
            state.byAddress[address] = left > 0 ? left : nil
        }
    }
}
