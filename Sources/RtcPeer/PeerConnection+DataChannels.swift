import CarrierLog
import Foundation
import RtcDTLS
import RtcSCTP

/// Data channels over SCTP over DTLS (RFC 8831): made by the application,
/// opened once SCTP is up (after the path probe), and the peer's as they come.
extension PeerConnection {
    /// Creates a data channel; it opens once the connection is up (`.open` on its events).
    public func createDataChannel(_ parameters: DataChannelParameters) -> DataChannel {
        let channel = DataChannel(parameters: parameters)
        // After close(), nothing would ever open or close it: a file waiting for it hung
        // (a call hung up at the moment a transfer began, once in a stress test's hundred).
        guard state != .closed else {
            channel.didClose()
            return channel
        }
        negotiator.addDataSection()
        if let association {
            open(channel, on: association)
        } else {
            pendingChannels.append(channel)
        }
        return channel
    }

    // MARK: Data channels

    func startSctpIfNegotiated() {
        guard association == nil, negotiator.dataNegotiated, let role = dtlsRole
        else { return }
        // usrsctp fixes its packet size when the association starts: probe first.
        let packetSize: Int?
        switch sctpPacketSizing {
        case .probing:
            return  // `.pathProbed` comes back here
        case .decided(let size):
            packetSize = size
        case .undecided:
            if let size = PathMtuProbe.size(remoteAdvertised: remoteSctpPacket), transport.ice.selectedPathIsLocal {
                sctpPacketSizing = .probing
                transport.probePath(size: size)
                return
            }
            sctpPacketSizing = .decided(nil)
            packetSize = nil
        }
        let transport = self.transport
        let directory = self.directory
        let created = WeakReference<SctpAssociation>()
        // SCTP events join the transport's ordered event stream; its handler
        // sends data-channel traffic straight to the channels.
        let association = SctpAssociation(
            isDtlsClient: role == .client, onOutbound: { [weak transport] packet in transport?.sendSctp(packet) },
            onEvent: { [weak transport] event in
                // A channel the peer opens is registered here, on the SCTP queue,
                // before any message that follows its DCEP open is handled. Done
                // on the actor, a message sent right after the open could find
                // no channel yet and be lost (seen about once in 60 setups).
                if case .channelOpen(let id, let parameters, true) = event, let association = created.value {
                    let channel = DataChannel(parameters: parameters)
                    channel.bind(association: association, id: id)
                    directory.insert(channel, id: id)
                    channel.didOpen()
                }
                transport?.relay(.sctp(event))
            })
        created.value = association
        self.association = association
        transport.attach(association)
        association.start(remoteMaxMessageSize: remoteMaxMessageSize, packetSize: packetSize)
        for channel in pendingChannels { open(channel, on: association) }
        pendingChannels = []
    }

    func open(_ channel: DataChannel, on association: SctpAssociation) {
        let directory = self.directory
        // Listed while it opens: a connection closed before SCTP answers must
        // close it too (it stayed "connecting" for ever, and a file waiting for it hung).
        directory.opening(channel)
        association.openChannel(channel.parameters) { result in
            guard directory.opened(channel), case .success(let id) = result else {
                channel.didClose()
                return
            }
            channel.bind(association: association, id: id)
            directory.insert(channel, id: id)
        }
    }

    func handleSctp(_ event: SctpAssociation.Event) {
        switch event {
        case .connected:
            break
        case .channelOpen(let id, _, let remote):
            if remote {
                // Made and opened on the SCTP queue (startSctpIfNegotiated).
                if let channel = directory.channel(id) { emit(.dataChannel(channel)) }
            } else {
                directory.channel(id)?.didOpen()
            }
        case .channelClosed(let id):
            Logger("sctp").info("data channel \(id) closed")
            directory.remove(id)?.didClose()
        case .closed(let reason):
            // A close from either side is normal; a lost association is worth a warning.
            Logger("sctp").log(reason == "closed" ? .info : .warning) {
                "SCTP association ended: \(reason); its data channels are closed"
            }
            for channel in directory.removeAll() { channel.didClose() }
        case .message, .bufferedAmountLow:
            break  // delivered directly
        }
    }
}
