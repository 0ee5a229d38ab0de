// Tells whoever waits on a job that its record changed (progress, status), so that the progress
// event stream sends a change the moment the worker stores it instead of reading the store on a
// timer. In-process only: a waiter also wakes after its timeout and reads the store, which stays
// the truth.
export class JobChanges {
  private readonly waiters = new Map<string, Set<() => void>>();

  notify(jobId: string): void {
    const waiting = this.waiters.get(jobId);
    if (!waiting) return;
    this.waiters.delete(jobId);
    for (const wake of waiting) wake();
  }

  /** Resolves at the job's next change, or after timeoutMs, whichever comes first. */
  next(jobId: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.get(jobId)?.delete(wake);
        if (this.waiters.get(jobId)?.size === 0) this.waiters.delete(jobId);
        resolve();
      };
      const timer = setTimeout(wake, timeoutMs);
      const set = this.waiters.get(jobId) ?? new Set();
      set.add(wake);
      this.waiters.set(jobId, set);
    });
  }
}
