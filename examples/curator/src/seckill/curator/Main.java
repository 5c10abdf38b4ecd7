package seckill.curator;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;

/**
 * The entry point: reads the flags, connects to MariaDB (its schema created
 * if missing) and ZooKeeper, and serves the lab's stock-service contract
 * (v1) with the JDK's HttpServer. A backend that does not answer at start
 * ends the process with a one-line message and exit code 2; a bad flag with
 * exit code 64.
 */
public final class Main {
    private Main() {}

    /** Config is what the flags (and SECKILL_* variables) set. */
    static final class Config {
        String listen = "127.0.0.1:13500";
        String zk = env("SECKILL_ZK_SERVERS", "");
        String mysql = env("SECKILL_MYSQL_DSN", "");
        String database = "seckill_curator";
        String instance = "";
        boolean noLock = false;
        Duration lockWait = Duration.ofSeconds(10);
        int threads = 64;
        int pool = 16;
        String adminToken = env("SECKILL_ADMIN_TOKEN", "");
        String lockRoot = "/seckill-curator/locks";
    }

    static final String USAGE = String.join("\n",
        "usage: java -jar seckill-curator.jar [flags]",
        "  --listen HOST:PORT     address to serve on (default 127.0.0.1:13500)",
        "  --zk HOST:PORT[,...]   ZooKeeper servers (default $SECKILL_ZK_SERVERS)",
        "  --mysql DSN            jdbc:mariadb://HOST:PORT/?user=U, or the lab's Go DSN",
        "                         U[:P]@tcp(HOST:PORT)/DB (default $SECKILL_MYSQL_DSN)",
        "  --database NAME        the service's own database (default seckill_curator)",
        "  --instance NAME        instance name in answers (default curator-PORT)",
        "  --no-lock              read-modify-write without any lock (oversells)",
        "  --lock-wait DURATION   lock wait budget, e.g. 10s, 500ms (default 10s)",
        "  --threads N            HTTP worker threads (default 64)",
        "  --pool N               MariaDB connections at most (default 16)",
        "  --lock-root PATH       ZooKeeper path of the locks (default /seckill-curator/locks)",
        "env SECKILL_ADMIN_TOKEN: /admin/* then requires Authorization: Bearer <token>");

    public static void main(String[] args) {
        // Curator's and ZooKeeper's logs (slf4j-simple, on stderr): warnings
        // and errors only, unless -Dorg.slf4j.simpleLogger.defaultLogLevel=info.
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        // The ZooKeeper client's reconnect warnings carry a stack trace
        // each; the service logs the connection's state changes itself.
        if (System.getProperty("org.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn") == null) {
            System.setProperty("org.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn", "error");
        }
        Config cfg;
        try {
            cfg = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("seckill-curator: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(64);
            return;
        }
        if (cfg == null) { // --help
            System.out.println(USAGE);
            return;
        }
        Service svc;
        try {
            svc = Service.open(cfg);
        } catch (StartupException e) {
            System.err.println("seckill-curator: " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            Http http = new Http(cfg, svc);
            http.start();
            System.err.printf("seckill-curator: %s serving on http://%s (strategy %s, zookeeper %s, database %s, lock wait %d ms)%n",
                cfg.instance, cfg.listen, svc.strategy(), cfg.zk, cfg.database, cfg.lockWait.toMillis());
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                http.stop();
                svc.close();
            }));
        } catch (Exception e) {
            System.err.println("seckill-curator: cannot serve on " + cfg.listen + ": " + e);
            svc.close();
            System.exit(2);
        }
    }

    static Config parse(String[] args) {
        Config c = new Config();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String val = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                val = a.substring(eq + 1);
                a = a.substring(0, eq);
            }
            switch (a) {
                case "-h", "--help" -> {
                    return null;
                }
                case "--no-lock" -> c.noLock = val == null || Boolean.parseBoolean(val);
                case "--listen", "--zk", "--mysql", "--database", "--instance", "--lock-wait", "--threads", "--pool", "--lock-root" -> {
                    if (val == null) {
                        if (i + 1 >= args.length) {
                            throw new IllegalArgumentException(a + " needs a value");
                        }
                        val = args[++i];
                    }
                    switch (a) {
                        case "--listen" -> c.listen = val;
                        case "--zk" -> c.zk = val;
                        case "--mysql" -> c.mysql = val;
                        case "--database" -> c.database = val;
                        case "--instance" -> c.instance = val;
                        case "--lock-wait" -> c.lockWait = duration(val);
                        case "--threads" -> c.threads = positive(a, val);
                        case "--pool" -> c.pool = positive(a, val);
                        default -> c.lockRoot = val;
                    }
                }
                default -> throw new IllegalArgumentException("unknown flag " + a);
            }
        }
        if (c.zk.isBlank()) {
            throw new IllegalArgumentException("no ZooKeeper: give --zk or set SECKILL_ZK_SERVERS (source the stack's env.sh)");
        }
        if (c.mysql.isBlank()) {
            throw new IllegalArgumentException("no MariaDB: give --mysql or set SECKILL_MYSQL_DSN (source the stack's env.sh)");
        }
        if (!c.database.matches("[A-Za-z0-9_]{1,64}")) {
            throw new IllegalArgumentException("--database " + c.database + ": letters, digits and _ only");
        }
        if (!c.lockRoot.startsWith("/") || c.lockRoot.endsWith("/")) {
            throw new IllegalArgumentException("--lock-root " + c.lockRoot + ": an absolute ZooKeeper path without a trailing /");
        }
        address(c.listen);
        if (c.instance.isEmpty()) {
            c.instance = "curator-" + address(c.listen).getPort();
        }
        return c;
    }

    /** address parses HOST:PORT. */
    static InetSocketAddress address(String s) {
        int colon = s.lastIndexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException("--listen " + s + ": want HOST:PORT");
        }
        int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--listen " + s + ": the port is no number");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("--listen " + s + ": port out of range");
        }
        String host = s.substring(0, colon);
        return new InetSocketAddress(host.isEmpty() ? "0.0.0.0" : host, port);
    }

    /** duration parses 10s, 500ms, 2m or a number of seconds. */
    static Duration duration(String s) {
        String v = s.trim().toLowerCase(Locale.ROOT);
        try {
            Duration d;
            if (v.endsWith("ms")) {
                d = Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
            } else if (v.endsWith("s")) {
                d = Duration.ofMillis(Math.round(Double.parseDouble(v.substring(0, v.length() - 1)) * 1000));
            } else if (v.endsWith("m")) {
                d = Duration.ofMillis(Math.round(Double.parseDouble(v.substring(0, v.length() - 1)) * 60000));
            } else {
                d = Duration.ofMillis(Math.round(Double.parseDouble(v) * 1000));
            }
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("--lock-wait " + s + ": must be positive");
            }
            return d;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--lock-wait " + s + ": want a duration such as 10s or 500ms");
        }
    }

    static int positive(String flag, String s) {
        try {
            int n = Integer.parseInt(s);
            if (n >= 1) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException(flag + " " + s + ": want a positive integer");
    }

    static String env(String name, String def) {
        String v = System.getenv(name);
        return v == null ? def : v.trim();
    }

    /** StartupException is a backend that does not answer at start. */
    static final class StartupException extends Exception {
        private static final long serialVersionUID = 1L;

        StartupException(String msg) {
            super(msg);
        }
    }
}
