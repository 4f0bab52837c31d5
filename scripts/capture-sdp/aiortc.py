import asyncio
from aiortc import RTCPeerConnection, RTCConfiguration
from aiortc.mediastreams import AudioStreamTrack, VideoStreamTrack
import aioice.ice as ice_mod

async def main():
    cfg = RTCConfiguration(iceServers=[])
    a = RTCPeerConnection(cfg); b = RTCPeerConnection(cfg)
    a.addTrack(AudioStreamTrack()); a.addTrack(VideoStreamTrack())
    a.createDataChannel("data")
    await a.setLocalDescription(await a.createOffer())
    open("aiortc-offer.sdp","w").write(a.localDescription.sdp)
    await b.setRemoteDescription(a.localDescription)
    await b.setLocalDescription(await b.createAnswer())
    open("aiortc-answer.sdp","w").write(b.localDescription.sdp)
    await a.close(); await b.close()
    # data channel only
    c = RTCPeerConnection(cfg); c.createDataChannel("data")
    await c.setLocalDescription(await c.createOffer())
    open("aiortc-datachannel-offer.sdp","w").write(c.localDescription.sdp)
    await c.close()
asyncio.run(main())
