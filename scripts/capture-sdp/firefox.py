#!/usr/bin/env python3
"""Captures a Firefox offer and answer (audio, video, data channel) as golden SDP files.

Firefox (Debian's firefox-esr) runs headless on a page that makes an offer and
an answer between two RTCPeerConnections, gathers, and POSTs both to a small
HTTP server on 127.0.0.1 started here. Writes firefox-offer.sdp and
firefox-answer.sdp into the current directory.
"""
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

PAGE = """<html><body><script>
(async () => {
  const a = new RTCPeerConnection({iceServers: []});
  a.addTransceiver('audio'); a.addTransceiver('video'); a.createDataChannel('data');
  const gathered = pc => new Promise(r => { if (pc.iceGatheringState === 'complete') r();
    pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === 'complete') r(); }; setTimeout(r, 3000); });
  await a.setLocalDescription(await a.createOffer()); await gathered(a);
  const b = new RTCPeerConnection({iceServers: []});
  await b.setRemoteDescription(a.localDescription);
  await b.setLocalDescription(await b.createAnswer()); await gathered(b);
  await fetch('/done', {method: 'POST', body: JSON.stringify({offer: a.localDescription.sdp, answer: b.localDescription.sdp})});
})();
</script></body></html>"""

result = {}
done = threading.Event()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(PAGE.encode())

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        result.update(json.loads(body))
        self.send_response(200)
        self.end_headers()
        done.set()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
profile = tempfile.mkdtemp(prefix="firefox-sdp-")
# Loopback candidates and no mDNS obfuscation, so the capture shows plain host candidates.
with open(os.path.join(profile, "user.js"), "w") as prefs:
    prefs.write('user_pref("media.peerconnection.ice.loopback", true);\n')
    prefs.write('user_pref("media.peerconnection.ice.obfuscate_host_addresses", false);\n')
firefox = subprocess.Popen([shutil.which("firefox-esr") or "firefox", "--headless", "--no-remote", "--profile", profile,
                            f"http://127.0.0.1:{server.server_port}/"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    if not done.wait(60):
        sys.exit("Firefox did not report its descriptions within 60 s")
finally:
    firefox.terminate()
    firefox.wait(10)
    shutil.rmtree(profile, ignore_errors=True)
for name in ("offer", "answer"):
    with open(f"firefox-{name}.sdp", "w", newline="") as handle:
        handle.write(result[name])
print("wrote firefox-offer.sdp and firefox-answer.sdp")
