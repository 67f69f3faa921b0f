// The real-program suite's JVM case (scripts/hzcli/real.py): 4 threads,
// each allocating direct ByteBuffers of 8 MiB in a loop (native memory:
// malloc through Unsafe.allocateMemory, cleared with setMemory, freed by
// the cleaner once a GC finds the buffer unreachable), writing every long
// of it, reading it back into a checksum and dropping it. A buffer must
// read as zero where it is sampled (one long a page) when it arrives.
//
// Usage: java DirectBuffers [BUFFERS_PER_THREAD]   (default 300)
// Output: "seconds S" (the threads' wall time), "checksum X" (unsigned
// decimal: the sum of every long read, which has a closed form the suite
// computes again: long j of buffer i of thread t holds
// (t * 1000003 + i) * 0x9E3779B97F4A7C15 + j), then "ok". A mismatch
// ends the program with an exception (exit status 1).
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

public class DirectBuffers {
    static final int THREADS = 4;
    static final int SIZE = 8 << 20;
    static final long GOLDEN = 0x9E3779B97F4A7C15L;

    // Thread t's buffers; returns the sum of every long read back.
    static long work(int t, int buffers) {
        long sum = 0;
        int words = SIZE / 8;
        for (int i = 0; i < buffers; i++) {
            ByteBuffer b = ByteBuffer.allocateDirect(SIZE).order(ByteOrder.LITTLE_ENDIAN);
            for (int j = 0; j < SIZE; j += 4096)
                if (b.getLong(j) != 0)
                    throw new IllegalStateException("thread " + t + ", buffer " + i + ": not zero at " + j);
            long base = (t * 1000003L + i) * GOLDEN;
            for (int j = 0; j < words; j++)
                b.putLong(j * 8, base + j);
            long s = 0;
            for (int j = 0; j < words; j++)
                s += b.getLong(j * 8);
            if (s != words * base + (long) words * (words - 1) / 2)
                throw new IllegalStateException("thread " + t + ", buffer " + i + ": read back wrong");
            sum += s;
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        int buffers = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        List<Future<Long>> sums = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int t = 0; t < THREADS; t++) {
            final int id = t;
            sums.add(pool.submit(() -> work(id, buffers)));
        }
        long total = 0;
        try {
            for (Future<Long> f : sums)
                total += f.get(); // a thread's exception ends the program here
        } finally {
            pool.shutdownNow();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        System.out.printf("seconds %.4f%n", seconds);
        System.out.println("checksum " + Long.toUnsignedString(total));
        System.out.println("ok");
    }
}
