#!/usr/bin/env python3
"""A network lab of Linux network namespaces: two sites behind NAT routers
and a public network, every link a veth pair at MTU 1500.

    pub  (bridge br0, 203.0.113.1: coturn, bootstrap node; host "p" at 203.0.113.30)
     |-- ra (wan 203.0.113.11) -- lan 198.18.1.1 -- a (Alice, 198.18.1.2)
     |-- rb (wan 203.0.113.12) -- lan 198.18.2.1 -- b (Bob,   198.18.2.2)

Each router runs nftables with one of these NATs (`set_nat`):
  cone       a home router: masquerade (Linux keeps the source port where it
             can: endpoint-independent mapping), conntrack lets in only
             replies (address-and-port-dependent filtering), and a firewall
             drops what comes unasked from the wan, to the router or past it
  cone-open  the same masquerade on a bare Linux box with no firewall: an
             unasked packet to the router is taken in, and the conntrack
             entry it leaves holds the port, so the site's next mapping
             towards that sender gets another port (the conntrack race)
  symmetric  masquerade random (a new port for every destination), firewall
  udp-blocked  masquerade, firewall, and every UDP packet forwarded is dropped
             (TCP passes)

Only 203.0.113.0/24 and 198.18.0.0/15 are used, inside namespaces this lab
makes. No namespace has a default route (only the lab's ranges are routed),
none is linked to the machine's own network, and each gets a resolv.conf of
its own (nameserver 127.0.0.1) and a hosts file with the lab's names
(turn.lab.test and the others in NAMES), so nothing can leave the lab.

As on the internet, a packet from a router to another site's private
address is routed and then lost, not refused at once: the routers send
198.18.0.0/15 (past their own site) into a "sink", a veth pair whose other
end stays down, so the kernel takes each packet and drops it. The public
network's host, where the TURN server runs, black-holes the range instead,
as a hardened server does (`ip route add blackhole`): a send there fails at
once with EINVAL, and coturn 4.6 closes the whole allocation on that error,
so a client must never ask it to relay there (`set_server_routes("sink")`
gives the gentler host).

As a program: `netlab.py up` builds the lab and prints its namespace names,
`netlab.py down PREFIX` removes one. As a module: `with Lab() as lab:`.
Needs root (CI runs as root), iproute2 and nftables (scripts/setup.sh).
"""
import json
import os
import shutil
import subprocess
import sys

PUBLIC_NET = "203.0.113"
SERVER_IP = f"{PUBLIC_NET}.1"
PUBLIC_HOST_IP = f"{PUBLIC_NET}.30"
SITES = {"a": ("198.18.1", f"{PUBLIC_NET}.11"), "b": ("198.18.2", f"{PUBLIC_NET}.12")}
PRIVATE_RANGE = "198.18.0.0/15"
# Names every namespace resolves (its /etc/hosts): the public network's servers.
NAMES = {name: SERVER_IP for name in ("turn.lab.test", "stun.lab.test", "bootstrap.lab.test", "express.lab.test")}
NATS = ("cone", "cone-open", "symmetric", "udp-blocked")


class LabError(RuntimeError):
    pass


def run(*command, check=True, input=None):
    result = subprocess.run(command, capture_output=True, text=True, input=input)
    if check and result.returncode != 0:
        raise LabError(f"{' '.join(command)}: {result.stderr.strip() or result.returncode}")
    return result


class Lab:
    """The namespaces of one lab; `ns(name)` gives the real name of pub, p, ra, rb, a, b."""

    def __init__(self, prefix=None):
        self.prefix = prefix or f"cl{os.getpid() % 100000}"
        self.names = ["pub", "p", "ra", "rb", "a", "b"]
        self.processes = []

    def ns(self, name):
        return f"{self.prefix}-{name}"

    def exec_prefix(self, name):
        """The command words that run a program inside namespace `name`."""
        return ["ip", "netns", "exec", self.ns(name)]

    def sh(self, name, *command, check=True, input=None):
        return run(*self.exec_prefix(name), *command, check=check, input=input)

    def start(self, name, command, **popen):
        """Starts a program inside `name`; it is killed when the lab goes down."""
        process = subprocess.Popen(self.exec_prefix(name) + list(command), **popen)
        self.processes.append(process)
        return process

    def __enter__(self):
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *error):
        self.down()

    def up(self):
        if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("nft"):
            raise LabError("the network lab needs root, iproute2 and nftables (run scripts/setup.sh as root)")
        for name in self.names:
            run("ip", "netns", "add", self.ns(name))
            # `ip netns exec` bind-mounts /etc/netns/NAME/* over /etc/*: a resolver
            # that reaches nothing, and the lab's own names.
            os.makedirs(f"/etc/netns/{self.ns(name)}", exist_ok=True)
            with open(f"/etc/netns/{self.ns(name)}/resolv.conf", "w") as handle:
                handle.write("nameserver 127.0.0.1\n")
            with open(f"/etc/netns/{self.ns(name)}/hosts", "w") as handle:
                handle.write("127.0.0.1 localhost\n" + "".join(f"{ip} {host}\n" for host, ip in NAMES.items()))
            self.sh(name, "ip", "link", "set", "lo", "up")
        self.sh("pub", "ip", "link", "add", "br0", "type", "bridge")
        self.sh("pub", "ip", "addr", "add", f"{SERVER_IP}/24", "dev", "br0")
        self.sh("pub", "ip", "link", "set", "br0", "up")
        self.set_server_routes("blackhole")
        self.link("pub", "to-p", "p", "wan", bridge=True)
        self.sh("p", "ip", "addr", "add", f"{PUBLIC_HOST_IP}/24", "dev", "wan")
        for site, (lan, wan_ip) in SITES.items():
            router = "r" + site
            self.link("pub", "to-" + router, router, "wan", bridge=True)
            self.sh(router, "ip", "addr", "add", f"{wan_ip}/24", "dev", "wan")
            self.link(router, "lan", site, "eth0")
            self.sh(router, "ip", "addr", "add", f"{lan}.1/24", "dev", "lan")
            self.sh(site, "ip", "addr", "add", f"{lan}.2/24", "dev", "eth0")
            # Only the lab's ranges are routed from a site: no default route.
            self.sh(site, "ip", "route", "add", f"{PUBLIC_NET}.0/24", "via", f"{lan}.1")
            self.sh(site, "ip", "route", "add", PRIVATE_RANGE, "via", f"{lan}.1")
            self.sink(router)
            self.sh(router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            self.set_nat(site, "cone")

    def link(self, left, left_name, right, right_name, bridge=False):
        """A veth pair at MTU 1500 from namespace `left` to `right`, up."""
        run("ip", "link", "add", left_name, "netns", self.ns(left), "mtu", "1500", "type", "veth",
            "peer", "name", right_name, "netns", self.ns(right), "mtu", "1500")
        if bridge:
            self.sh(left, "ip", "link", "set", left_name, "master", "br0")
        self.sh(left, "ip", "link", "set", left_name, "up")
        self.sh(right, "ip", "link", "set", right_name, "up")

    def sink(self, name):
        """Routes the private range into a link of `name` whose other end is
        down: sends succeed and the packets vanish (this kernel may lack the
        dummy link type)."""
        if self.sh(name, "ip", "link", "show", "sink", check=False).returncode != 0:
            run("ip", "link", "add", "sink", "netns", self.ns(name), "type", "veth", "peer", "name", "sink-end",
                "netns", self.ns(name))
        self.sh(name, "ip", "link", "set", "sink", "up")
        self.sh(name, "ip", "route", "replace", PRIVATE_RANGE, "dev", "sink")

    def set_server_routes(self, kind):
        """How the public network's host treats the sites' private range:
        "blackhole" (a send fails at once, as on a hardened server) or "sink"
        (packets are taken and vanish)."""
        self.sh("pub", "ip", "route", "del", PRIVATE_RANGE, check=False)
        if kind == "blackhole":
            self.sh("pub", "ip", "route", "add", "blackhole", PRIVATE_RANGE)
        elif kind == "sink":
            self.sink("pub")
        else:
            raise LabError(f"no server routes called {kind}: blackhole, sink")

    def set_nat(self, site, kind):
        """Gives site `a` or `b`'s router the NAT `kind` (one of NATS), and
        forgets its mappings."""
        if kind not in NATS:
            raise LabError(f"no NAT called {kind}: {', '.join(NATS)}")
        masquerade = "masquerade random" if kind == "symmetric" else "masquerade"
        drop = "meta l4proto udp drop;" if kind == "udp-blocked" else ""
        # A dropped packet's conntrack entry is never confirmed, so it holds no port.
        unasked = "" if kind == "cone-open" else 'iifname "wan" ct state new drop;'
        rules = f"""
table ip lab
delete table ip lab
table ip lab {{
  chain nat_out {{ type nat hook postrouting priority srcnat; oifname "wan" {masquerade}; }}
  chain forwarded {{ type filter hook forward priority filter; policy accept; {unasked} {drop} }}
  chain incoming {{ type filter hook input priority filter; policy accept; {unasked} }}
}}
"""
        self.sh("r" + site, "nft", "-f", "-", input=rules)
        self.flush_mappings(site)

    def flush_mappings(self, site):
        """Forgets every NAT mapping of a site's router, as its reboot would."""
        self.sh("r" + site, "conntrack", "-F", check=False)

    def set_public_address(self, site, ip):
        """Gives a site's router a new public address (an ISP's new lease):
        the old one is gone and every mapping with it."""
        router = "r" + site
        for line in self.sh(router, "ip", "-4", "-o", "addr", "show", "dev", "wan").stdout.splitlines():
            old = line.split()[3]
            self.sh(router, "ip", "addr", "del", old, "dev", "wan")
        self.sh(router, "ip", "addr", "add", f"{ip}/24", "dev", "wan")
        self.flush_mappings(site)

    def shape(self, site, kbit, queue_ms):
        """Makes a site's upstream a slow link: a token bucket (tc tbf) on its
        router's wan at `kbit` kbit/s with `queue_ms` of queue (a DSL or cable
        uplink; what does not fit the queue is dropped and counted). The
        bucket holds one full packet (1600 bytes), so the link serializes as
        a modem's does: a deeper bucket lets a burst through at the veth's
        speed, and a bandwidth probe (ours, libwebrtc's) shorter than the
        bucket then measures the veth instead of the link."""
        self.sh("r" + site, "tc", "qdisc", "replace", "dev", "wan", "root", "tbf", "rate", f"{kbit}kbit",
                "burst", "1600", "latency", f"{queue_ms}ms")

    def shaper_counters(self, site):
        """tc's counters of the site's shaped uplink: bytes and packets through,
        drops, and backlog (bytes waiting in its queue); {} when unshaped."""
        shown = json.loads(self.sh("r" + site, "tc", "-s", "-j", "qdisc", "show", "dev", "wan").stdout or "[]")
        return next((q for q in shown if q.get("kind") == "tbf"), {})

    def shaped_counts(self, site):
        """What went through the site's shaped uplink, and what it dropped: (packets, drops)."""
        tbf = self.shaper_counters(site)
        return tbf.get("packets", 0), tbf.get("drops", 0)

    def unshape(self, site):
        """Takes the shaping off a site's uplink."""
        self.sh("r" + site, "tc", "qdisc", "del", "dev", "wan", "root", check=False)

    def set_link(self, site, up):
        """Takes the link between a site and its router down or up."""
        self.sh("r" + site, "ip", "link", "set", "lan", "up" if up else "down")

    def down(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for name in self.names:
            run("ip", "netns", "del", self.ns(name), check=False)
            shutil.rmtree(f"/etc/netns/{self.ns(name)}", ignore_errors=True)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "up":
        lab = Lab(sys.argv[2] if len(sys.argv) > 2 else None)
        lab.up()
        print(" ".join(lab.ns(name) for name in lab.names))
    elif len(sys.argv) == 3 and sys.argv[1] == "down":
        Lab(sys.argv[2]).down()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
