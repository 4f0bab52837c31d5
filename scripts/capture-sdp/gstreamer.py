import gi, sys
gi.require_version('Gst', '1.0'); gi.require_version('GstWebRTC', '1.0'); gi.require_version('GstSdp', '1.0')
from gi.repository import Gst, GstWebRTC, GstSdp, GLib
Gst.init(None)
pipe = Gst.parse_launch('webrtcbin name=w bundle-policy=max-bundle audiotestsrc is-live=true ! opusenc ! rtpopuspay ! application/x-rtp,media=audio,encoding-name=OPUS,payload=96 ! w. videotestsrc is-live=true ! vp8enc deadline=1 ! rtpvp8pay ! application/x-rtp,media=video,encoding-name=VP8,payload=97 ! w.')
w = pipe.get_by_name('w')
loop = GLib.MainLoop()
def on_offer(promise, _):
    reply = promise.get_reply()
    offer = reply.get_value('offer')
    w.emit('set-local-description', offer, None)
    GLib.timeout_add(1500, lambda: (open('gstreamer-offer.sdp','w').write(w.get_property('local-description').sdp.as_text()), loop.quit()))
def on_nego(_):
    w.emit('create-data-channel', 'data', None)
    w.emit('create-offer', None, Gst.Promise.new_with_change_func(on_offer, None))
w.connect('on-negotiation-needed', on_nego)
pipe.set_state(Gst.State.PLAYING)
GLib.timeout_add(10000, loop.quit)
loop.run()
pipe.set_state(Gst.State.NULL)
