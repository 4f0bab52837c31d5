#!/usr/bin/env python3
"""Drives samples/browser/index.html as a person would, against `carrier rtc`.

Headless Chromium opens the page, presses "Make the offer", the offer line
goes to `carrier rtc answer --no-trickle --echo --video media/testsrc.ivf --loop`,
its answer line goes into the page, "Connect" is pressed, a message is typed
and sent. Prints one JSON line: {"state", "echoed", "videoTime"}; exit 0 when
the page connected, got the message back from carrier and played video.
usage: browser_sample.py CARRIER_BINARY
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from browser_peer import WebDriver, free_port  # noqa: E402

carrier = sys.argv[1]
page = os.path.join(ROOT, "samples", "browser", "index.html")
port = free_port()
profile = tempfile.mkdtemp(prefix="browser-sample-")
driver_process = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
answerer = subprocess.Popen([carrier, "rtc", "answer", "--host-ip", "127.0.0.1", "--no-trickle", "--echo",
                             "--video", os.path.join(ROOT, "media", "testsrc.ivf"), "--loop", "--timeout", "60"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
driver = WebDriver(port)
result = {"state": None, "echoed": False, "videoTime": 0}
try:
    driver.wait_ready(20)
    driver.start(profile)
    driver.open("file://" + page)
    offer = driver.run_async("makeOffer().then(done, e => done('error: ' + e));")
    answerer.stdin.write(offer + "\n")
    answerer.stdin.flush()
    answer = answerer.stdout.readline()  # carrier answers with one line (--no-trickle)
    driver.run("document.getElementById('answerLine').value = arguments[0];"
               "document.getElementById('connect').click();", answer)
    deadline = time.monotonic() + 20
    sent = False
    while time.monotonic() < deadline:
        page_state = driver.run("return {state: pc.connectionState, open: channel.readyState,"
                                " log: received(), video: document.getElementById('video').currentTime};")
        result.update(state=page_state["state"], videoTime=page_state["video"])
        if page_state["open"] == "open" and not sent:
            driver.run("document.getElementById('text').value = 'hello carrier';"
                       "document.getElementById('send').click();")
            sent = True
        result["echoed"] = "from carrier: hello carrier" in page_state["log"]
        if result["echoed"] and result["videoTime"] > 0.5:
            break
        time.sleep(0.1)
finally:
    driver.quit()
    driver_process.terminate()
    answerer.stdin.close()
    answerer.terminate()
    for process in (driver_process, answerer):
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
    shutil.rmtree(profile, ignore_errors=True)
print(json.dumps(result))
sys.exit(0 if result["state"] == "connected" and result["echoed"] and result["videoTime"] > 0.5 else 1)
