#!/usr/bin/env python3
"""Recording proxy used to capture tests/fixtures: forwards everything to a `kgc serve` on
127.0.0.1:<upstream-port>, except requests with a protobuf body, which it saves as
/tmp/cap/NNN.pb (+ NNN.meta) and answers with a 400 Status.

    kgc serve --listen 127.0.0.1:0 --data-dir /tmp/kgcdata --in-memory   # prints its port
    python3 tools/capture_proxy.py <kgc-port> 41600 &
    sed 's/<kgc-port>/41600/' /tmp/kgcdata/kubeconfig > /tmp/cap/kubeconfig
    cd /tmp/cap && bash tools/capture_all.sh   # uses tools/capture_one.sh as ./run.sh
"""
import http.client, http.server, os, sys, threading, json
UP_PORT = int(sys.argv[1]); LISTEN = int(sys.argv[2])
counter = [0]; lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def handle_any(self):
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n else b''
        ct = self.headers.get('Content-Type', '')
        if 'protobuf' in ct and body:
            with lock:
                counter[0] += 1; i = counter[0]
            open(f'/tmp/cap/{i:03d}.pb', 'wb').write(body)
            open(f'/tmp/cap/{i:03d}.meta', 'w').write(json.dumps({'method': self.command, 'path': self.path, 'ct': ct, 'cmd': self.headers.get('Kubectl-Command')}))
            msg = json.dumps({"kind":"Status","apiVersion":"v1","status":"Failure","message":"captured","reason":"BadRequest","code":400}).encode()
            self.send_response(400); self.send_header('Content-Type','application/json'); self.send_header('Content-Length',str(len(msg))); self.end_headers(); self.wfile.write(msg); return
        c = http.client.HTTPConnection('127.0.0.1', UP_PORT, timeout=60)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ('host','connection')}
        c.request(self.command, self.path, body=body or None, headers=hdrs)
        r = c.getresponse(); data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() in ('transfer-encoding','connection','content-length'): continue
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(data))); self.end_headers(); self.wfile.write(data)
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any
http.server.ThreadingHTTPServer(('127.0.0.1', LISTEN), H).serve_forever()
