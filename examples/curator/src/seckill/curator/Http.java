package seckill.curator;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.StringReader;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The HTTP side: the contract's routes on the JDK's HttpServer, a fixed
 * pool of worker threads, JSON in and out with Gson.
 */
final class Http {
    private static final int MAX_BODY = 16 << 10;
    private static final int MAX_KEY = 255;
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();

    private final Main.Config cfg;
    private final Service svc;
    private HttpServer server;
    private ExecutorService pool;

    Http(Main.Config cfg, Service svc) {
        this.cfg = cfg;
        this.svc = svc;
    }

    void start() throws IOException {
        server = HttpServer.create(Main.address(cfg.listen), 1024);
        AtomicInteger n = new AtomicInteger();
        pool = new ThreadPoolExecutor(cfg.threads, cfg.threads, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "http-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(pool);
        server.createContext("/", this::serve);
        server.start();
    }

    void stop() {
        if (server != null) {
            server.stop(0);
            pool.shutdownNow();
        }
    }

    /** Reply is the status and body of an answer. */
    private record Reply(int status, Object body) {}

    private void serve(HttpExchange ex) throws IOException {
        Reply r;
        try {
            r = route(ex);
        } catch (Service.Failure f) {
            r = error(f.status, f.code, f.getMessage());
        } catch (RuntimeException e) {
            Service.log(ex.getRequestMethod() + " " + ex.getRequestURI().getPath() + ": " + e);
            r = error(500, "internal", "an unexpected error; the instance's log has it");
        }
        byte[] out = GSON.toJson(r.body()).getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.getResponseHeaders().set("X-Instance", cfg.instance);
        try (OutputStream os = ex.getResponseBody()) {
            ex.sendResponseHeaders(r.status(), out.length);
            os.write(out);
        } finally {
            ex.close();
        }
    }

    private Reply route(HttpExchange ex) throws IOException, Service.Failure {
        String path = ex.getRequestURI().getPath();
        String method = ex.getRequestMethod();
        if (path.startsWith("/admin/") && !authorized(ex)) {
            return error(401, "unauthorized", "the admin API wants Authorization: Bearer <token>");
        }
        switch (path) {
            case "/api/v1/purchase" -> {
                allow(method, "POST");
                return new Reply(200, svc.purchase(purchase(ex)));
            }
            case "/admin/reset" -> {
                allow(method, "POST");
                Map<String, Long> b = object(body(ex), "goods_id", "stock");
                long id = need(b, "goods_id", 1);
                long stock = need(b, "stock", 0);
                return new Reply(200, svc.reset(id, stock));
            }
            case "/admin/orders" -> {
                allow(method, "GET");
                return new Reply(200, svc.orders(id(query(ex, "goods_id"))));
            }
            case "/healthz" -> {
                allow(method, "GET");
                svc.health();
                return new Reply(200, Service.json("status", "ok"));
            }
            default -> {
                if (path.startsWith("/api/v1/goods/")) {
                    allow(method, "GET");
                    return new Reply(200, svc.goods(id(path.substring("/api/v1/goods/".length()))));
                }
                return error(404, "not_found", "no route " + path);
            }
        }
    }

    private static Reply error(int status, String code, String detail) {
        Map<String, Object> m = Service.json("error", code);
        if (detail != null && !detail.isEmpty()) {
            m.put("detail", detail);
        }
        return new Reply(status, m);
    }

    private static void allow(String method, String want) throws Service.Failure {
        if (!method.equals(want)) {
            throw new Service.Failure(405, "method_not_allowed", "use " + want);
        }
    }

    private boolean authorized(HttpExchange ex) {
        if (cfg.adminToken.isEmpty()) {
            return true;
        }
        String got = ex.getRequestHeaders().getFirst("Authorization");
        byte[] want = ("Bearer " + cfg.adminToken).getBytes(StandardCharsets.UTF_8);
        return got != null && MessageDigest.isEqual(got.getBytes(StandardCharsets.ISO_8859_1), want);
    }

    private static Service.Purchase purchase(HttpExchange ex) throws IOException, Service.Failure {
        String raw = ex.getRequestHeaders().getFirst("Idempotency-Key");
        Map<String, Object> b = parse(body(ex), Set.of("goods_id", "qty", "user_id"));
        long goods = need(b, "goods_id", 1);
        long qty = need(b, "qty", 1);
        Object u = b.get("user_id");
        if (!(u instanceof String user)) {
            throw bad(u == null ? "missing field user_id" : "user_id must be a string");
        }
        int ulen = user.codePointCount(0, user.length());
        if (ulen < 1 || ulen > 64) {
            throw bad("user_id must have 1 to 64 characters");
        }
        if (raw == null || raw.isEmpty()) {
            throw bad("missing Idempotency-Key header");
        }
        String key = utf8(raw);
        if (key.codePointCount(0, key.length()) > MAX_KEY) {
            throw bad("the Idempotency-Key has more than " + MAX_KEY + " characters");
        }
        return new Service.Purchase(goods, qty, user, key);
    }

    /** utf8 reads a header (bytes as ISO-8859-1 chars) as UTF-8. */
    private static String utf8(String header) throws Service.Failure {
        try {
            CharBuffer cb = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(header.getBytes(StandardCharsets.ISO_8859_1)));
            return cb.toString();
        } catch (CharacterCodingException e) {
            throw bad("the Idempotency-Key header is not valid UTF-8");
        }
    }

    private static String body(HttpExchange ex) throws IOException, Service.Failure {
        try (InputStream in = ex.getRequestBody()) {
            byte[] b = in.readNBytes(MAX_BODY + 1);
            if (b.length > MAX_BODY) {
                throw bad("the body is larger than " + MAX_BODY + " bytes");
            }
            return new String(b, StandardCharsets.UTF_8);
        }
    }

    private static String query(HttpExchange ex, String name) {
        String q = ex.getRequestURI().getRawQuery();
        if (q == null) {
            return null;
        }
        for (String kv : q.split("&")) {
            int eq = kv.indexOf('=');
            if (eq > 0 && kv.substring(0, eq).equals(name)) {
                return kv.substring(eq + 1);
            }
        }
        return null;
    }

    /** id reads a goods id: a positive decimal integer. */
    private static long id(String s) throws Service.Failure {
        if (s == null || !s.matches("[0-9]{1,18}") || Long.parseLong(s) < 1) {
            throw bad("goods id must be a positive integer");
        }
        return Long.parseLong(s);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Long> object(String body, String... fields) throws Service.Failure {
        Map<String, Object> m = parse(body, Set.of(fields));
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (!(e.getValue() instanceof Long)) {
                throw bad(e.getKey() + " must be an integer");
            }
        }
        return (Map<String, Long>) (Map<String, ?>) m;
    }

    private static long need(Map<String, ?> b, String field, long min) throws Service.Failure {
        Object v = b.get(field);
        if (v == null) {
            throw bad("missing field " + field);
        }
        if (!(v instanceof Long n)) {
            throw bad(field + " must be an integer");
        }
        if (n < min) {
            throw bad(field + " must be at least " + min);
        }
        return n;
    }

    /**
     * parse reads a JSON object of the given fields, strictly: no other
     * field, none twice, integers as Long, strings as String.
     */
    private static Map<String, Object> parse(String body, Set<String> fields) throws Service.Failure {
        Map<String, Object> m = new LinkedHashMap<>();
        Set<String> seen = new HashSet<>();
        try (JsonReader r = new JsonReader(new StringReader(body))) {
            r.setLenient(false);
            if (r.peek() != JsonToken.BEGIN_OBJECT) {
                throw bad("the body must be a JSON object");
            }
            r.beginObject();
            while (r.hasNext()) {
                String name = r.nextName();
                if (!fields.contains(name)) {
                    throw bad("unknown field \"" + name + "\"; the fields are " + String.join(", ", fields));
                }
                if (!seen.add(name)) {
                    throw bad("field \"" + name + "\" appears twice");
                }
                switch (r.peek()) {
                    case NUMBER -> {
                        String num = r.nextString();
                        if (!num.matches("-?[0-9]{1,18}")) {
                            throw bad(name + " must be an integer");
                        }
                        m.put(name, Long.parseLong(num));
                    }
                    case STRING -> m.put(name, r.nextString());
                    case NULL -> {
                        r.nextNull();
                        throw bad(name + " must not be null");
                    }
                    default -> throw bad(name + " has the wrong type");
                }
            }
            r.endObject();
            if (r.peek() != JsonToken.END_DOCUMENT) {
                throw bad("data after the JSON object");
            }
        } catch (IOException | IllegalStateException e) {
            throw bad("the body is not valid JSON");
        }
        return m;
    }

    private static Service.Failure bad(String detail) {
        return new Service.Failure(400, "invalid_request", detail);
    }
}
