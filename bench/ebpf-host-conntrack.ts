/**
 * `--host-conntrack`: the eBPF benchmark's node with rules of its own, as a node running
 * kube-proxy (nftables mode) has them, in every configuration alike — no policy included. A
 * network namespace without a rule that needs connection tracking has no conntrack hooks at all,
 * so without them no policy pays nothing for the host's conntrack while the nftables datapath
 * (whose table tracks connections) and a real node do; and on a real node the eBPF datapath's
 * direct delivery asks the host's conntrack about every connection it delivers and expires the
 * host's entry (docs/ARCHITECTURE.md, "Delivered directly"). With these rules the host tracks
 * every connection in every configuration: the fair comparison.
 *
 * The rules: the nat hooks with one Service of a pod elsewhere and the masquerade of marked
 * packets (every new connection gets the NAT hooks' null binding), and the forward chain's drop
 * of `ct state invalid` (kube-proxy's KUBE-FORWARD rule). Each configuration's turn starts from an
 * empty host table: a turn leaves its connections' entries (TIME_WAIT, 2 minutes), and a few
 * turns' worth would fill the host's table (nf_conntrack_max), which then drops new connections.
 */
import { runChecked } from '../src/dataplane/index.ts';

const TABLE = 'palisade-bench-kube-proxy';

/** Loads the kube-proxy-like rules into the node's namespace. */
export async function hostConntrackOn(netns: string): Promise<void> {
  await runChecked('nft', ['-f', '-'], {
    netns,
    input: `table ip ${TABLE} {
      chain prerouting {
        type nat hook prerouting priority dstnat;
        ip daddr 10.96.0.99 tcp dport 80 dnat to 10.244.9.9:8080
      }
      chain postrouting {
        type nat hook postrouting priority srcnat;
        meta mark & 0x4000 == 0x4000 masquerade
      }
      chain forward {
        type filter hook forward priority filter; policy accept;
        ct state invalid drop
      }
    }
`,
  });
}

/** Empties the host's connection table (a configuration's turn starts from none). */
export async function flushHostConntrack(netns: string): Promise<void> {
  await runChecked('conntrack', ['-F'], { netns });
}
