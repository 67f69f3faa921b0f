// Direct ByteBuffers (native memory: malloc through Unsafe.allocateMemory,
// cleared with setMemory, freed by the cleaner after GC) from 4 threads,
// sizes 4 KiB to 8 MiB. Each buffer must read as zeros when allocated and
// give back the pattern written into it. Prints a checksum that depends only
// on the seeds (not on thread timing) and "ok"; exits 1 on any mismatch.
// Usage: java DirectBuffers [rounds]
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

public class DirectBuffers {
    static final int THREADS = 4;
    static final int PER_ROUND = 12;
    static final AtomicLong failures = new AtomicLong();

    static long pattern(long seed, long i) {
        long z = seed + i * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 31)) * 0xBF58476D1CE4E5B9L;
        return z ^ (z >>> 29);
    }

    // One thread's work; returns its checksum.
    static long work(int id, int rounds) {
        SplittableRandom r = new SplittableRandom(1000 + id);
        long sum = 0;
        for (int round = 0; round < rounds; round++) {
            List<ByteBuffer> live = new ArrayList<>();
            List<Long> seeds = new ArrayList<>();
            for (int k = 0; k < PER_ROUND; k++) {
                // log-uniform from 4 KiB to 8 MiB, odd sizes included
                int size = (int) Math.min(8L << 20, (4096L << r.nextInt(12)) + r.nextInt(4096));
                ByteBuffer b = ByteBuffer.allocateDirect(size).order(ByteOrder.LITTLE_ENDIAN);
                for (int j = 0; j + 8 <= size; j += 8)
                    if (b.getLong(j) != 0) { fail(id, "not zero at " + j + " of " + size); break; }
                long seed = r.nextLong();
                int words = size / 8;
                for (int j = 0; j < words; j++) b.putLong(j * 8, pattern(seed, j));
                for (int j = words * 8; j < size; j++) b.put(j, (byte) j);
                live.add(b);
                seeds.add(seed);
            }
            for (int k = 0; k < live.size(); k++) {
                ByteBuffer b = live.get(k);
                long seed = seeds.get(k);
                int size = b.capacity();
                for (int j = 0; j < size / 8; j++) {
                    long v = b.getLong(j * 8);
                    if (v != pattern(seed, j)) { fail(id, "pattern at " + j * 8 + " of " + size); break; }
                    sum += v;
                }
                for (int j = size / 8 * 8; j < size; j++)
                    if (b.get(j) != (byte) j) { fail(id, "tail at " + j + " of " + size); break; }
                sum = sum * 31 + size;
            }
            live.clear();
            if (round % 4 == 3) System.gc();
        }
        return sum;
    }

    static void fail(int id, String what) {
        failures.incrementAndGet();
        System.err.println("thread " + id + ": " + what);
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        long[] sums = new long[THREADS];
        Thread[] ts = new Thread[THREADS];
        for (int i = 0; i < THREADS; i++) {
            final int id = i;
            ts[i] = new Thread(() -> {
                try {
                    sums[id] = work(id, rounds);
                } catch (Throwable e) {
                    fail(id, e.toString());
                }
            });
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        System.gc();
        long total = 0;
        for (long s : sums) total = total * 1_000_003 + s;
        System.out.println("checksum " + Long.toHexString(total));
        if (failures.get() != 0) {
            System.out.println("FAILED: " + failures.get() + " mismatches");
            System.exit(1);
        }
        System.out.println("ok");
    }
}
