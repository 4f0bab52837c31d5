#!/usr/bin/env python3
"""Express under load: `express-load` (SENDERS senders depositing DEPOSITS
signed messages of SIZE bytes, RECIPIENTS recipients each pulling and
deleting through every node at once) against `carrier express` nodes on
SQLite (one node: SQLite has one writer) and on PostgreSQL (one node, then
two on one database), side by side in one run. Every deposit is durable when
it is answered: SQLite with synchronous=FULL, PostgreSQL with fsync and
synchronous_commit on (group commit is the server's own). PostgreSQL is a
server of the run's own: initdb in a temporary directory (as the postgres
user when run as root), a free port on 127.0.0.1. Prints deposits per second,
p50/p99 deposit latency, and what was lost or handed out twice (must be 0)."""
import glob, json, os, random, shutil, socket, subprocess, sys, tempfile, time

carrier = sys.argv[1] if len(sys.argv) > 1 else ".build/release/carrier"
load = sys.argv[2] if len(sys.argv) > 2 else ".build/release/express-load"
deposits = int(os.environ.get("DEPOSITS", "10000"))
senders = int(os.environ.get("SENDERS", "16"))
recipients = int(os.environ.get("RECIPIENTS", "16"))
size = int(os.environ.get("SIZE", "1024"))
root = tempfile.mkdtemp(prefix="carrier-bench-express-")
procs = []


def as_postgres():
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] if os.geteuid() == 0 else []


def start_postgres():
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    if not versions:
        sys.exit("bench_express: PostgreSQL is not installed (make setup installs it)")
    bindir = versions[-1]
    data = os.path.join(root, "pg")
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    subprocess.run(as_postgres() + [bindir + "/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                                    "--no-locale"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = random.randint(40000, 49999)
    server = subprocess.Popen(as_postgres() + [bindir + "/postgres", "-D", data, "-p", str(port), "-k", root,
                                               "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200",
                                               "-c", "fsync=on", "-c", "synchronous_commit=on"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(server)
    for _ in range(400):
        if subprocess.run([bindir + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(port)]).returncode == 0:
            return bindir, port
        time.sleep(0.05)  # bounded wait for the server to accept sessions
    sys.exit("bench_express: postgres did not start")


def express(db):
    node = subprocess.Popen([carrier, "express", "--host", "127.0.0.1", "--db", db, "--quota", "1000000",
                             # a load of few senders: no rate limits, no sender quota in the way
                             "--rate-limit", "0", "--sender-quota", "10000000", "--max-store-mb", "65536"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(node)
    return node, node.stdout.readline().strip()


def stop(nodes):
    for node in nodes:
        node.send_signal(2)
    for node in nodes:
        node.wait(timeout=20)


def run_load(entries):
    args = [load, "--senders", str(senders), "--recipients", str(recipients), "--deposits", str(deposits),
            "--size", str(size)]
    for entry in entries:
        args += ["--node", entry]
    out = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        sys.exit("bench_express: express-load failed: " + out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


rows = []
try:
    bindir, port = start_postgres()
    cases = [("SQLite", 1, lambda i: os.path.join(root, "express.db"))]
    for nodes in (1, 2):
        database = "bench%d" % nodes
        subprocess.run([bindir + "/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", database],
                       check=True)
        url = "postgresql://postgres@127.0.0.1:%d/%s" % (port, database)
        cases.append(("PostgreSQL", nodes, lambda i, url=url: url))
    for store, count, db in cases:
        started = [express(db(i)) for i in range(count)]
        result = run_load([entry for _, entry in started])
        stop([node for node, _ in started])
        result["store"] = store
        rows.append(result)
        print("%-10s %d node(s): %6.0f deposits/s  p50 %5.1f ms  p99 %6.1f ms  stored %d  lost %d  doubled %d%s" % (
            store, count, result["depositsPerSecond"], result["p50Ms"], result["p99Ms"], result["stored"],
            result["lost"], result["doubled"], "  errors: %s" % result["errors"] if result["errors"] else ""),
            flush=True)
    sqlite, pg1, pg2 = rows
    print("PostgreSQL two nodes / one: %.2f   PostgreSQL one node / SQLite: %.2f" % (
        pg2["depositsPerSecond"] / pg1["depositsPerSecond"], pg1["depositsPerSecond"] / sqlite["depositsPerSecond"]))
    print(json.dumps({"express": rows}))
    if any(row["lost"] or row["doubled"] for row in rows):
        sys.exit("bench_express: records were lost or handed out twice")
finally:
    for p in procs:
        if p.poll() is None:
            p.send_signal(2)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(root, ignore_errors=True)
