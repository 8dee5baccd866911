/* A stand-in for bcryptprimitives.dll under wine 8 (Debian 12), which lacks it: Rust's std
 * (1.78+) imports its ProcessPrng for random seeds, so without it no Rust program starts.
 * Built by scripts/cross with zig into the wine prefix's system32; never shipped. */
#include <windows.h>
#include <ntsecapi.h>

/* ProcessPrng: fills DATA with LEN random bytes and always succeeds on Windows; here it asks
 * RtlGenRandom (advapi32's SystemFunction036), at most 1 GiB at a time (its length is 32-bit). */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!RtlGenRandom(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
