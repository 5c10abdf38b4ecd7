package seckill.curator;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * The stock service: a purchase under Curator's InterProcessMutex on the
 * goods' path (or, with --no-lock, under none), the read-modify-write of
 * the stock and the order in one MariaDB transaction.
 */
final class Service implements AutoCloseable {
    private final Main.Config cfg;
    private final Pool pool;
    private final CuratorFramework zk;
    private final ConcurrentHashMap<Long, InterProcessMutex> locks = new ConcurrentHashMap<>();
    private static final int MAX_CACHED_LOCKS = 10_000;

    /** Failure is an answer other than 200: its status, code and detail. */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;
        final int status;
        final String code;

        Failure(int status, String code, String detail) {
            super(detail, null, false, false);
            this.status = status;
            this.code = code;
        }
    }

    /** Purchase is a validated purchase request. */
    record Purchase(long goodsId, long qty, String userId, String key) {}

    private Service(Main.Config cfg, Pool pool, CuratorFramework zk) {
        this.cfg = cfg;
        this.pool = pool;
        this.zk = zk;
    }

    /** open connects to MariaDB (creating the schema) and ZooKeeper. */
    static Service open(Main.Config cfg) throws Main.StartupException {
        Pool pool = Pool.open(cfg);
        CuratorFramework zk = CuratorFrameworkFactory.builder()
            .connectString(cfg.zk)
            .sessionTimeoutMs(15_000)
            .connectionTimeoutMs(5_000)
            .retryPolicy(new ExponentialBackoffRetry(100, 3))
            .build();
        zk.getConnectionStateListenable().addListener((client, state) -> log("zookeeper: " + state));
        zk.start();
        boolean up;
        try {
            up = zk.blockUntilConnected(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            up = false;
        }
        if (!up) {
            zk.close();
            pool.close();
            throw new Main.StartupException("ZooKeeper at " + cfg.zk + " did not answer within 5 s (is the stack up? source its env.sh)");
        }
        return new Service(cfg, pool, zk);
    }

    String strategy() {
        return cfg.noLock ? "none" : "curator";
    }

    @Override
    public void close() {
        zk.close();
        pool.close();
    }

    /** health checks MariaDB and ZooKeeper. */
    void health() throws Failure {
        if (!zk.getZookeeperClient().isConnected()) {
            throw new Failure(503, "backend_unavailable", "ZooKeeper is not connected");
        }
        try (Pool.Lease l = pool.lease()) {
            if (!l.conn().isValid(2)) {
                l.broken();
                throw new Failure(503, "backend_unavailable", "MariaDB does not answer");
            }
        } catch (SQLException e) {
            throw backend("health", e);
        }
    }

    /** purchase sells p.qty of p.goodsId once per key. */
    Map<String, Object> purchase(Purchase p) throws Failure {
        if (cfg.noLock) {
            return deduct(p, 0);
        }
        InterProcessMutex mutex = mutex(p.goodsId());
        long t0 = System.nanoTime();
        boolean got;
        try {
            got = mutex.acquire(cfg.lockWait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            log("lock goods " + p.goodsId() + ": " + e);
            throw new Failure(503, "backend_unavailable", "ZooKeeper did not answer while taking the lock");
        }
        double waited = (System.nanoTime() - t0) / 1e6;
        if (!got) {
            throw new Failure(503, "lock_timeout", "the lock of goods " + p.goodsId() + " was not acquired within " + cfg.lockWait.toMillis() + " ms");
        }
        try {
            return deduct(p, waited);
        } finally {
            try {
                mutex.release();
            } catch (Exception e) {
                log("unlock goods " + p.goodsId() + ": " + e + " (the node goes with the session)");
            }
        }
    }

    private InterProcessMutex mutex(long goodsId) {
        InterProcessMutex m = locks.get(goodsId);
        if (m != null) {
            return m;
        }
        String path = cfg.lockRoot + "/goods-" + goodsId;
        if (locks.size() >= MAX_CACHED_LOCKS) {
            return new InterProcessMutex(zk, path);
        }
        return locks.computeIfAbsent(goodsId, g -> new InterProcessMutex(zk, path));
    }

    /**
     * deduct is the read-modify-write: the idempotency check, the stock
     * read, then a separate UPDATE to the value read minus qty and the
     * order, in one transaction. Without the lock two of them read the
     * same stock and both write: an oversell or a lost update.
     */
    private Map<String, Object> deduct(Purchase p, double waited) throws Failure {
        try (Pool.Lease l = pool.lease()) {
            Connection c = l.conn();
            try {
                c.setAutoCommit(false);
                Map<String, Object> prior = replay(c, p, waited);
                if (prior != null) {
                    c.rollback();
                    return prior;
                }
                long stock;
                try (PreparedStatement st = c.prepareStatement("SELECT stock FROM goods WHERE id = ?")) {
                    st.setLong(1, p.goodsId());
                    try (ResultSet rs = st.executeQuery()) {
                        if (!rs.next()) {
                            c.rollback();
                            throw notFound(p.goodsId());
                        }
                        stock = rs.getLong(1);
                    }
                }
                if (stock < p.qty()) {
                    c.rollback();
                    throw new Failure(409, "sold_out", "goods " + p.goodsId() + " has " + stock + " left, fewer than " + p.qty());
                }
                long remaining = stock - p.qty();
                try (PreparedStatement st = c.prepareStatement("UPDATE goods SET stock = ? WHERE id = ?")) {
                    st.setLong(1, remaining);
                    st.setLong(2, p.goodsId());
                    st.executeUpdate();
                }
                long orderId;
                try (PreparedStatement st = c.prepareStatement(
                        "INSERT INTO orders (request_id, goods_id, qty, user_id, remaining) VALUES (?, ?, ?, ?, ?)",
                        Statement.RETURN_GENERATED_KEYS)) {
                    st.setString(1, p.key());
                    st.setLong(2, p.goodsId());
                    st.setLong(3, p.qty());
                    st.setString(4, p.userId());
                    st.setLong(5, remaining);
                    st.executeUpdate();
                    try (ResultSet rs = st.getGeneratedKeys()) {
                        rs.next();
                        orderId = rs.getLong(1);
                    }
                }
                c.commit();
                return receipt(p, remaining, orderId, waited, false);
            } catch (SQLIntegrityConstraintViolationException dup) {
                // The same key sold meanwhile (another goods' lock, or no
                // lock): this transaction sells nothing, the first order
                // answers.
                rollback(c);
                c.setAutoCommit(true);
                Map<String, Object> prior = replay(c, p, waited);
                if (prior == null) {
                    throw backend("purchase", dup);
                }
                return prior;
            } catch (Failure | SQLException | RuntimeException e) {
                rollback(c);
                throw e;
            }
        } catch (SQLException e) {
            throw backend("purchase", e);
        }
    }

    /** replay answers the order of p's key, or null when there is none. */
    private Map<String, Object> replay(Connection c, Purchase p, double waited) throws SQLException, Failure {
        try (PreparedStatement st = c.prepareStatement(
                "SELECT goods_id, qty, user_id, remaining, id FROM orders WHERE request_id = ?")) {
            st.setString(1, p.key());
            try (ResultSet rs = st.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                if (rs.getLong(1) != p.goodsId() || rs.getLong(2) != p.qty() || !rs.getString(3).equals(p.userId())) {
                    throw new Failure(422, "idempotency_key_reused",
                        "this Idempotency-Key has an order of another goods, quantity or user");
                }
                return receipt(p, rs.getLong(4), rs.getLong(5), waited, true);
            }
        }
    }

    private Map<String, Object> receipt(Purchase p, long remaining, long orderId, double waited, boolean replayed) {
        Map<String, Object> m = json("goods_id", p.goodsId(), "qty", p.qty(), "remaining", remaining,
            "request_id", p.key(), "order_id", orderId, "instance", cfg.instance, "strategy", strategy(),
            "lock_wait_ms", Math.round(waited * 1000) / 1000.0);
        if (replayed) {
            m.put("replayed", true);
        }
        return m;
    }

    /** reset sets the goods' stock (creating it) and deletes its orders. */
    Map<String, Object> reset(long goodsId, long stock) throws Failure {
        try (Pool.Lease l = pool.lease()) {
            Connection c = l.conn();
            try {
                c.setAutoCommit(false);
                try (PreparedStatement st = c.prepareStatement(
                        "INSERT INTO goods (id, stock) VALUES (?, ?) ON DUPLICATE KEY UPDATE stock = VALUES(stock)")) {
                    st.setLong(1, goodsId);
                    st.setLong(2, stock);
                    st.executeUpdate();
                }
                try (PreparedStatement st = c.prepareStatement("DELETE FROM orders WHERE goods_id = ?")) {
                    st.setLong(1, goodsId);
                    st.executeUpdate();
                }
                c.commit();
            } catch (SQLException | RuntimeException e) {
                rollback(c);
                throw e;
            }
        } catch (SQLException e) {
            throw backend("reset", e);
        }
        return json("goods_id", goodsId, "stock", stock);
    }

    /** goods answers the stock and the units its orders sold. */
    Map<String, Object> goods(long goodsId) throws Failure {
        try (Pool.Lease l = pool.lease()) {
            Connection c = l.conn();
            c.setAutoCommit(true);
            long stock;
            try (PreparedStatement st = c.prepareStatement("SELECT stock FROM goods WHERE id = ?")) {
                st.setLong(1, goodsId);
                try (ResultSet rs = st.executeQuery()) {
                    if (!rs.next()) {
                        throw notFound(goodsId);
                    }
                    stock = rs.getLong(1);
                }
            }
            long sold;
            try (PreparedStatement st = c.prepareStatement("SELECT COALESCE(SUM(qty), 0) FROM orders WHERE goods_id = ?")) {
                st.setLong(1, goodsId);
                try (ResultSet rs = st.executeQuery()) {
                    rs.next();
                    sold = rs.getLong(1);
                }
            }
            return json("id", goodsId, "stock", stock, "sold", sold);
        } catch (SQLException e) {
            throw backend("goods", e);
        }
    }

    /** orders answers every key with an order of the goods. */
    Map<String, Object> orders(long goodsId) throws Failure {
        List<String> keys = new ArrayList<>();
        try (Pool.Lease l = pool.lease()) {
            Connection c = l.conn();
            c.setAutoCommit(true);
            try (PreparedStatement st = c.prepareStatement("SELECT request_id FROM orders WHERE goods_id = ? ORDER BY id")) {
                st.setLong(1, goodsId);
                try (ResultSet rs = st.executeQuery()) {
                    while (rs.next()) {
                        keys.add(rs.getString(1));
                    }
                }
            }
        } catch (SQLException e) {
            throw backend("orders", e);
        }
        return json("goods_id", goodsId, "request_ids", keys);
    }

    /** json is an object of the pairs key, value, ... in their order. */
    static Map<String, Object> json(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    private static Failure notFound(long goodsId) {
        return new Failure(404, "goods_not_found", "no goods " + goodsId);
    }

    private static Failure backend(String what, SQLException e) {
        log(what + ": " + e);
        return new Failure(503, "backend_unavailable", "MariaDB did not answer");
    }

    private static void rollback(Connection c) {
        try {
            c.rollback();
        } catch (SQLException e) {
            // the lease is given back broken by its caller's catch
        }
    }

    static void log(String msg) {
        System.err.println("seckill-curator: " + msg);
    }

    /**
     * Pool is a bounded pool of MariaDB connections: at most n open, each
     * lent to one caller at a time, a broken one closed and replaced.
     */
    static final class Pool implements AutoCloseable {
        private final String url;
        private final Properties props;
        private final String database;
        private final Semaphore permits;
        private final ConcurrentLinkedDeque<Connection> idle = new ConcurrentLinkedDeque<>();

        private Pool(String url, Properties props, String database, int n) {
            this.url = url;
            this.props = props;
            this.database = database;
            this.permits = new Semaphore(n, true);
        }

        /** Lease is one borrowed connection; close gives it back. */
        final class Lease implements AutoCloseable {
            private Connection conn;
            private boolean broken;

            Lease(Connection conn) {
                this.conn = conn;
            }

            Connection conn() {
                return conn;
            }

            void broken() {
                broken = true;
            }

            @Override
            public void close() {
                give(conn, broken);
                conn = null;
            }
        }

        /** lease borrows a connection, waiting at most 5 s for one. */
        Lease lease() throws SQLException {
            try {
                if (!permits.tryAcquire(5, TimeUnit.SECONDS)) {
                    throw new SQLException("no MariaDB connection free within 5 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SQLException("interrupted waiting for a connection", e);
            }
            Connection c = idle.pollFirst();
            try {
                if (c == null) {
                    c = connect();
                }
                return new Lease(c);
            } catch (SQLException | RuntimeException e) {
                permits.release();
                throw e;
            }
        }

        private void give(Connection c, boolean broken) {
            try {
                if (broken || c.isClosed() || !c.getAutoCommit() && !resetTx(c)) {
                    c.close();
                } else {
                    idle.addFirst(c);
                }
            } catch (SQLException e) {
                try {
                    c.close();
                } catch (SQLException ignored) {
                    // closing a broken connection
                }
            } finally {
                permits.release();
            }
        }

        /** resetTx ends a transaction left open and turns autocommit on. */
        private static boolean resetTx(Connection c) {
            try {
                c.rollback();
                c.setAutoCommit(true);
                return true;
            } catch (SQLException e) {
                return false;
            }
        }

        private Connection connect() throws SQLException {
            Connection c = DriverManager.getConnection(url, props);
            try {
                c.setCatalog(database);
                c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
                return c;
            } catch (SQLException e) {
                c.close();
                throw e;
            }
        }

        @Override
        public void close() {
            for (Connection c; (c = idle.pollFirst()) != null; ) {
                try {
                    c.close();
                } catch (SQLException ignored) {
                    // shutting down
                }
            }
        }

        private static final Pattern GO_DSN = Pattern.compile("^(?:(.*)@)?(?:(\\w+)\\(([^)]*)\\))?/([^?/]*)(?:\\?.*)?$");

        /**
         * open reads --mysql (a jdbc:mariadb:// URL or the lab's Go DSN),
         * connects and creates the database and tables if missing.
         */
        static Pool open(Main.Config cfg) throws Main.StartupException {
            String url;
            Properties props = new Properties();
            String where;
            if (cfg.mysql.startsWith("jdbc:")) {
                url = cfg.mysql;
                where = cfg.mysql.replaceAll("password=[^&]*", "password=***");
            } else {
                Matcher m = GO_DSN.matcher(cfg.mysql);
                if (!m.matches()) {
                    throw new Main.StartupException("--mysql " + cfg.mysql + ": want jdbc:mariadb://HOST:PORT/ or USER[:PASSWORD]@tcp(HOST:PORT)/DB");
                }
                String net = m.group(2) == null ? "tcp" : m.group(2);
                String addr = m.group(3) == null || m.group(3).isEmpty() ? "127.0.0.1:3306" : m.group(3);
                if (!net.equals("tcp")) {
                    throw new Main.StartupException("--mysql: only tcp(HOST:PORT) addresses, not " + net + "(...); give a jdbc:mariadb:// URL");
                }
                String user = "root";
                String pass = "";
                if (m.group(1) != null) {
                    int colon = m.group(1).indexOf(':');
                    user = colon < 0 ? m.group(1) : m.group(1).substring(0, colon);
                    pass = colon < 0 ? "" : m.group(1).substring(colon + 1);
                }
                url = "jdbc:mariadb://" + addr + "/";
                props.setProperty("user", user);
                if (!pass.isEmpty()) {
                    props.setProperty("password", pass);
                }
                props.setProperty("connectTimeout", "5000");
                props.setProperty("socketTimeout", "30000");
                where = user + "@" + addr;
            }
            Pool p = new Pool(url, props, cfg.database, cfg.pool);
            try (Connection c = DriverManager.getConnection(url, props); Statement st = c.createStatement()) {
                st.execute("CREATE DATABASE IF NOT EXISTS `" + cfg.database + "` CHARACTER SET utf8mb4");
                c.setCatalog(cfg.database);
                st.execute("CREATE TABLE IF NOT EXISTS goods ("
                    + " id BIGINT NOT NULL PRIMARY KEY,"
                    + " stock BIGINT NOT NULL"
                    + ") ENGINE=InnoDB");
                st.execute("CREATE TABLE IF NOT EXISTS orders ("
                    + " id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
                    + " request_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
                    + " goods_id BIGINT NOT NULL,"
                    + " qty BIGINT NOT NULL,"
                    + " user_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
                    + " remaining BIGINT NOT NULL,"
                    + " created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),"
                    + " UNIQUE KEY uk_orders_request (request_id),"
                    + " KEY k_orders_goods (goods_id)"
                    + ") ENGINE=InnoDB");
            } catch (SQLException e) {
                String msg = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
                throw new Main.StartupException("MariaDB at " + where + " did not answer or refused the schema: " + msg);
            }
            return p;
        }
    }
}
