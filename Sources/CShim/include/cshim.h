// cshim: what Swift cannot do by itself without a library: the one CPU
// instruction it cannot emit (CRC32C), and glibc's heap figures. The
// libraries' macro and variadic calls have a shim each (CShimOpus, CShimVpx,
// CShimGLib), so that a target takes the headers of the libraries it uses only.
#ifndef CSHIM_H
#define CSHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// CRC32C (Castagnoli, reflected, as SCTP uses it: RFC 9260 appendix A),
// continued from `crc` over `length` bytes, without the initial or final
// inversion: start from 0xFFFFFFFF and invert the result. Uses the SSE4.2
// crc32 instruction when the CPU has it (one instruction per 8 bytes),
// a table otherwise. Why here: Debian's usrsctp computes its checksum with
// an unoptimised table, half of its CPU on a data channel; usrsctp's
// checksum offload hands that job to us.
uint32_t cshim_crc32c_update(uint32_t crc, const void *data, size_t length);
// The table version, whatever the CPU has (so tests can compare the two).
uint32_t cshim_crc32c_update_table(uint32_t crc, const void *data, size_t length);
// Whether cshim_crc32c_update uses the CPU instruction (for benchmarks and logs).
bool cshim_crc32c_is_hardware(void);

// Heap bytes in use (glibc's mallinfo2: uordblks, blocks on the heap, plus
// hblkhd, blocks mapped on their own): for tests and soaks that look for
// leaks, steadier than the resident size (which moves with malloc's pools).
size_t cshim_heap_bytes_in_use(void);

// Makes the process not dumpable (prctl PR_SET_DUMPABLE 0, variadic in C):
// no core file, and other processes of the same user cannot ptrace it or
// read its memory through /proc. A process that holds identity keys calls it
// first. Returns whether the kernel took it.
bool cshim_disable_core_dumps(void);

#endif
