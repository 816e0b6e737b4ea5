/**
 * A seccomp filter for the sandbox (classic BPF, as bubblewrap's `--seccomp FD` takes it): system calls a block
 * never needs to build and run a model, and that would reach the kernel's larger attack surface or other processes,
 * fail with EPERM. x86_64 only (other architectures number their calls differently: no filter there, and the
 * sandbox's description says so).
 */

const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_BIT = 0x40000000;
const RET_ALLOW = 0x7fff0000;
const RET_EPERM = 0x00050000 | 1;
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const RET_K = 0x06;
/** `socket` on x86_64, and the domain it is refused for: a unix socket reaches a service on the host's file system
 * (an agent's or a session bus's socket in a mounted folder); pairs made by `socketpair` stay allowed. */
const SOCKET_X86_64 = 41;
const AF_UNIX = 1;
/** Offset of the low half of the first argument in `struct seccomp_data`. */
const ARG0 = 16;

/** x86_64 numbers of the calls refused. */
export const DENIED_X86_64: Record<string, number> = {
  // another process's memory or descriptors (the judge's verdict pipe): with no capability in the sandbox these fail
  // already for a process that is not dumpable; refused here whoever started the tool
  ptrace: 101,
  process_vm_readv: 310,
  process_vm_writev: 311,
  pidfd_open: 434,
  pidfd_getfd: 438,
  kcmp: 312,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  bpf: 321,
  perf_event_open: 298,
  userfaultfd: 323,
  kexec_load: 246,
  kexec_file_load: 320,
  mount: 165,
  umount2: 166,
  pivot_root: 155,
  swapon: 167,
  swapoff: 168,
  reboot: 169,
  init_module: 175,
  finit_module: 313,
  delete_module: 176,
  setns: 308,
  unshare: 272,
  open_by_handle_at: 304,
  iopl: 172,
  ioperm: 173,
  acct: 163,
  quotactl: 179,
  lookup_dcookie: 212,
  fanotify_init: 300,
  move_mount: 429,
  fsopen: 430,
  fsmount: 432,
  open_tree: 428,
  // io_uring's requests are carried out by the kernel without passing through this filter (a socket opened by an
  // io_uring request is not seen by the socket rule below): no ring at all
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
};

function insn(code: number, jt: number, jf: number, k: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt16LE(code, 0);
  b.writeUInt8(jt, 2);
  b.writeUInt8(jf, 3);
  b.writeUInt32LE(k >>> 0, 4);
  return b;
}

/** The filter program, or undefined where there is none for this architecture. */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  if (arch !== 'x64') return undefined;
  const denied = Object.values(DENIED_X86_64);
  const prog: Buffer[] = [
    insn(LD_W_ABS, 0, 0, 4), // arch
    insn(JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
    insn(RET_K, 0, 0, RET_EPERM), // another ABI: refused
    insn(LD_W_ABS, 0, 0, 0), // nr
    insn(JGE_K, 0, 1, X32_BIT), // the x32 ABI: refused
    insn(RET_K, 0, 0, RET_EPERM),
    // socket(AF_UNIX, ...): refused; socket of another domain: allowed (the network is a namespace of its own)
    insn(JEQ_K, 0, 4, SOCKET_X86_64),
    insn(LD_W_ABS, 0, 0, ARG0),
    insn(JEQ_K, 0, 1, AF_UNIX),
    insn(RET_K, 0, 0, RET_EPERM),
    insn(RET_K, 0, 0, RET_ALLOW),
  ];
  // each denied call: equal -> jump to the EPERM return at the end
  denied.forEach((nr, i) => prog.push(insn(JEQ_K, denied.length - i, 0, nr)));
  prog.push(insn(RET_K, 0, 0, RET_ALLOW), insn(RET_K, 0, 0, RET_EPERM));
  return Buffer.concat(prog);
}
