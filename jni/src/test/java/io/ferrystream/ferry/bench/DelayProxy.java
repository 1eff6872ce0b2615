package io.ferrystream.ferry.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Arrays;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP proxy on 127.0.0.1 that holds every chunk of bytes for a one-way delay in each direction,
 * so a round trip through it costs more than a direct one: the lookup benchmark's model of a
 * database one network hop away. The delay is set by {@link #calibrate} so that the added round
 * trip, measured as PostgreSQL sees it (a {@code SELECT 1} through JDBC, through the proxy and
 * directly), is what the benchmark says. Timers overshoot (Go's sleep by about a millisecond on
 * this machine, which is why the benchmark no longer uses tests/tcpdelay; Java's {@code parkNanos}
 * by tens of microseconds), so the delay asked for and the round trip measured differ, and only the
 * measured one is reported. Bytes keep their order; a stream of requests is delayed, not
 * serialized. Daemon threads; {@link #close} stops accepting.
 */
final class DelayProxy implements AutoCloseable {
    private final ServerSocket server;
    private final InetSocketAddress target;
    private volatile long delayNanos;

    DelayProxy(InetSocketAddress target, long delayNanos) throws IOException {
        this.target = target;
        this.delayNanos = delayNanos;
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread accept = new Thread(this::accept, "delay-proxy-accept");
        accept.setDaemon(true);
        accept.start();
    }

    /** host:port to connect to instead of the target. */
    String address() {
        return "127.0.0.1:" + server.getLocalPort();
    }

    long delayNanos() {
        return delayNanos;
    }

    /**
     * Sets the one-way delay so that the median added round trip of {@code SELECT 1} over JDBC
     * ({@code url} through this proxy, {@code directUrl} without it) is within 3 % of {@code
     * wantNanos}; returns the measured added round trip, ns. Fails if ten tries do not get there.
     */
    long calibrate(String directUrl, String url, String user, String password, long wantNanos) throws Exception {
        long direct = roundTripNanos(directUrl, user, password);
        long added = 0;
        for (int i = 0; i < 10; i++) {
            added = roundTripNanos(url, user, password) - direct;
            Bench.log("delay proxy: one-way delay %d µs, round trip %.3f ms added (direct %.3f ms)", delayNanos / 1000,
                    added / 1e6, direct / 1e6);
            if (Math.abs(added - wantNanos) <= wantNanos * 0.03) {
                return added;
            }
            delayNanos = Math.max(0, delayNanos + (wantNanos - added) / 2);
        }
        throw new IllegalStateException(String.format("the delay proxy cannot add %.3f ms to a round trip: %.3f ms at a"
                + " one-way delay of %d µs", wantNanos / 1e6, added / 1e6, delayNanos / 1000));
    }

    /** The median time of a {@code SELECT 1} over one JDBC connection, ns (2,000 of them after 200). */
    static long roundTripNanos(String url, String user, String password) throws Exception {
        try (Connection c = DriverManager.getConnection(url, user, password); Statement st = c.createStatement()) {
            long[] t = new long[2_000];
            for (int i = -200; i < t.length; i++) {
                long t0 = System.nanoTime();
                try (ResultSet rs = st.executeQuery("SELECT 1")) {
                    rs.next();
                }
                if (i >= 0) {
                    t[i] = System.nanoTime() - t0;
                }
            }
            Arrays.sort(t);
            return t[t.length / 2];
        }
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket(target.getAddress(), target.getPort());
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                pipe(client, upstream);
                pipe(upstream, client);
            } catch (IOException e) {
                if (!server.isClosed()) {
                    Bench.log("delay proxy: %s", e);
                }
            }
        }
    }

    /** Copies {@code from} to {@code to}, each chunk once the delay after it was read has passed. */
    private void pipe(Socket from, Socket to) throws IOException {
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        LinkedBlockingQueue<Object[]> queue = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            byte[] buf = new byte[64 << 10];
            try {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    queue.put(new Object[] {Arrays.copyOf(buf, n), System.nanoTime() + delayNanos});
                }
            } catch (IOException | InterruptedException e) {
                // the connection ended
            }
            queue.add(new Object[] {null, 0L});
        }, "delay-proxy-read");
        Thread writer = new Thread(() -> {
            try {
                while (true) {
                    Object[] chunk = queue.take();
                    if (chunk[0] == null) {
                        break;
                    }
                    long due = (Long) chunk[1];
                    for (long wait = due - System.nanoTime(); wait > 0; wait = due - System.nanoTime()) {
                        LockSupport.parkNanos(wait);
                    }
                    out.write((byte[]) chunk[0]);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // the connection ended
            }
            try {
                from.close();
                to.close();
            } catch (IOException e) {
                // closing anyway
            }
        }, "delay-proxy-write");
        reader.setDaemon(true);
        writer.setDaemon(true);
        reader.start();
        writer.start();
    }

    @Override
    public void close() throws IOException {
        server.close();
    }

    static long millis(double ms) {
        return TimeUnit.MICROSECONDS.toNanos(Math.round(ms * 1000));
    }
}
