// The API contract suite again, against the scale-out topology (an API node and a worker sharing
// a real Redis and a real S3 server): the HTTP behaviour must be the same in both modes.
process.env.CONVERTD_TEST_BACKEND = 'scaled';
await import('./api-contract.test.ts');
