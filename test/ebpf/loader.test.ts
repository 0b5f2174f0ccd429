/**
 * The loader's report of a program the kernel refuses: the verifier's reason, taken from the end
 * of the load log libbpf prints on bpftool's stderr (a sample of a real refusal below), so a
 * developer sees why rather than only "Permission denied". Needs no kernel.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { verifierReason } from '../../src/datapaths/ebpf/kernel/index.ts';

/** bpftool's stderr for a to_pod that read a map value at an unbounded offset (shortened). */
const REFUSED = [
  "libbpf: prog 'to_pod': BPF program load failed: Permission denied",
  "libbpf: prog 'to_pod': -- BEGIN PROG LOAD LOG --",
  '0: R1=ctx() R10=fp0',
  '; int to_pod(struct __sk_buff *skb) @ palisade.bpf.c:869',
  '0: (bf) r7 = r1                       ; R1=ctx() R7=ctx()',
  '1: (b7) r9 = 0                        ; R9=0',
  '; if (((volatile __u8 *)h)[p->sport] == 7) @ handoff.h:56',
  '599: (69) r8 = *(u16 *)(r10 -96)      ; R8=scalar(smin=smin32=0,smax=umax=smax32=umax32=0xffff)',
  '600: (bf) r1 = r0                     ; R0=map_value(map=handoffs,ks=4,vs=64)',
  '601: (0f) r1 += r8                    ; R1=map_value(map=handoffs,ks=4,vs=64,smax=0xffff)',
  '602: (71) r1 = *(u8 *)(r1 +0)',
  'invalid access to map value, value_size=64 off=65535 size=1',
  'R1 max value is outside of the allowed memory range',
  'processed 122 insns (limit 1000000) max_states_per_insn 0 total_states 6 peak_states 6 mark_read 0',
  '-- END PROG LOAD LOG --',
  "libbpf: prog 'to_pod': failed to load: -13",
  "libbpf: failed to load object '/run/palisade/bpf-objects/palisade-7146a359f9fb56f7.o'",
  'Error: failed to load object file',
].join('\n');

describe('the loader’s report of a refused program', () => {
  it('gives the verifier log’s last lines: the refused instruction, the complaint, the count', () => {
    const reason = verifierReason(REFUSED);
    const lines = reason.split('\n');
    assert.equal(lines.length, 8);
    assert.equal(lines.at(-1)?.startsWith('processed 122 insns'), true);
    assert.ok(lines.includes('invalid access to map value, value_size=64 off=65535 size=1'));
    assert.ok(lines.includes('; if (((volatile __u8 *)h)[p->sport] == 7) @ handoff.h:56'), 'the source line');
    assert.ok(!reason.includes('END PROG LOAD LOG') && !reason.includes('libbpf:'), 'the log only');
    assert.ok(!reason.includes('r7 = r1'), 'not its beginning');
  });

  it('gives nothing when there is no load log (a failure before the verifier, another tool)', () => {
    assert.equal(verifierReason('libbpf: failed to open object file\nError: failed to open object file'), '');
    assert.equal(verifierReason(''), '');
  });
});
