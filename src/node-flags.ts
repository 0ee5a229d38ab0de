// The flags every launcher of the service gives node: `npm start`, `npm run convertd`, the
// `convertd` command's first line, the Dockerfile, compose.yaml, the bench and the tests' service
// start (test/launch-flags.test.ts checks that they agree). A running process cannot reliably set
// them on itself (v8.setFlagsFromString after start is documented as unpredictable).
//
// --expose-gc lets the upload path ask for a young-generation collection every 16 MiB received,
// which frees the socket buffers of finished chunks (src/http/upload-garbage.ts). Without it, 20
// concurrent 25 MB uploads grew the service's RSS by up to 69 MiB; with it by 2-15 MiB
// (BENCHMARKS.md, change 19).
//
// --heap-growing-percent=100 lets the old generation grow to twice what survived the last full
// collection before the next one starts. V8's own factor drops to about 1.1-1.3 once the service
// has run a few hundred jobs and idled (its memory reducer), which leaves less room above the
// live heap (~32 MB) than the young generation holds. V8 then starts a new incremental full
// collection as soon as the previous one ends, and the upload chunks that a young collection
// promotes kept it there: about 10 full collections a second during 20 concurrent uploads, which cut
// their throughput from ~400 to ~200 MB/s (BENCHMARKS.md, change 33). The memory reducer still
// shrinks the heap when the service is idle.
export const SERVICE_NODE_FLAGS: readonly string[] = ['--expose-gc', '--heap-growing-percent=100'];
