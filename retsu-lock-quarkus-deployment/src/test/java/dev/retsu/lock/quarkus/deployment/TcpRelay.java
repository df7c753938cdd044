package dev.retsu.lock.quarkus.deployment;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A plain TCP relay on a given loopback port to the test server: a database that is "up" from the
 * moment the relay starts, for an application configured with the relay's port before it.
 */
final class TcpRelay implements AutoCloseable {

  private final ServerSocket server;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  private TcpRelay(int port, String host, int targetPort) throws IOException {
    server = new ServerSocket(port, 50, InetAddress.getLoopbackAddress());
    Thread accept =
        new Thread(
            () -> {
              while (!server.isClosed()) {
                try {
                  Socket client = server.accept();
                  Socket upstream = new Socket(host, targetPort);
                  sockets.add(client);
                  sockets.add(upstream);
                  pump(client.getInputStream(), upstream.getOutputStream(), upstream);
                  pump(upstream.getInputStream(), client.getOutputStream(), client);
                } catch (IOException e) {
                  return; // closed
                }
              }
            },
            "retsu-lock-test-relay-accept");
    accept.setDaemon(true);
    accept.start();
  }

  /** How many client connections it has relayed. */
  int connections() {
    return sockets.size() / 2;
  }

  static TcpRelay start(int port, String host, int targetPort) throws IOException {
    return new TcpRelay(port, host, targetPort);
  }

  /** A port that nothing listens on now. */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static void pump(InputStream in, OutputStream out, Socket other) {
    Thread t =
        new Thread(
            () -> {
              byte[] buf = new byte[8192];
              try {
                for (int n; (n = in.read(buf)) >= 0; ) {
                  out.write(buf, 0, n);
                  out.flush();
                }
              } catch (IOException e) {
                // one side went away
              } finally {
                try {
                  other.close();
                } catch (IOException e) {
                  // closing anyway
                }
              }
            },
            "retsu-lock-test-relay-pump");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Socket s : sockets) {
      s.close();
    }
  }
}
