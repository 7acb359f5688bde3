// jemalloc's options for the vscaler binary, read by jemalloc when it starts (before main): linked
// only into the programs built with it (CMake's vscaler_allocator). MALLOC_CONF in the environment
// is applied after these, so an operator can still change them without a rebuild.
//
// - narenas:2: two arenas, as glibc's were capped (controller/memory_trim.h). Each thread's cache
//   takes most allocations without touching an arena; more arenas would only hold more free pages.
//   At 4 connections the webhook measured the same with 2 and with jemalloc's default of 8.
// - dirty_decay_ms:1000, muzzy_decay_ms:0: freed pages may go back to the OS a second after the
//   burst that freed them (a relist, a pass), not the default 10 s, as the arenas go on allocating
//   (there is no background purging thread); the MemoryTrimmer purges the rest once the process
//   is idle. Peak RSS against 5000 (bench/sections/scale.sh, 10k scalers
//   over 50k Deployments: 45 against 48 MiB; recommender_memory.sh: 63.6 against 64.1), the
//   settled RSS the same (36 and 53 MiB; glibc's malloc: 32 and 54).
extern "C" {
// NOLINTNEXTLINE: the name and type jemalloc looks for.
extern const char* malloc_conf;
const char* malloc_conf = "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
