// LuceneDriver drives Lucene 8.8 (Debian's liblucene8-java) for
// summa-bench with the protocol of bench/xapian/driver.cc: one request per
// line on stdin, replies "ok NS ..." where NS is the wall time in
// nanoseconds the operation took inside this JVM (the pipe round trip is
// excluded), or "err MESSAGE".
//
// Requests (as the Xapian driver's, plus):
//   search KIND T1 T2 ...      TOP_10_COUNT: top 10 by BM25 (stored id and
//                              title read) and the exact totalHits; reply
//                              "ok NS TOTAL K" then K id lines
//   searchm MODE KIND T1 ...   one timed search in MODE (top10: Lucene's
//                              default totalHitsThreshold 1000, block-max
//                              WAND; top10count: exact count; count:
//                              IndexSearcher.count); "ok NS TOTAL"
//   warm NQ MAXMS\n<NQ lines "MODE KIND T1 ...">
//                              JIT warm-up: rounds of every query until
//                              three rounds' times are within 3% (at
//                              least 10 rounds, at most 500 or MAXMS
//                              milliseconds); "ok NS ROUNDS"
//   segments                   "ok 0 N": the reader's segment count
//
// The batch payload is the Xapian driver's: the Go side tokenizes with
// engine/analysis.Tokenize, so the terms and positions are ours by
// construction (PreTokenized below is the analyzer's token stream). One
// indexed field "text" holds the title's tokens then the body's after a
// gap (so no phrase spans them); "id" is an indexed, stored string (upserts
// are updateDocument), "title" is stored.
import java.io.*;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.atomic.*;

import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.analysis.tokenattributes.*;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.search.*;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public final class LuceneDriver {
  static final BM25Similarity BM25 = new BM25Similarity(1.2f, 0.75f);
  static final FieldType TEXT = new FieldType(TextField.TYPE_NOT_STORED);

  static {
    TEXT.setOmitNorms(false);
    TEXT.freeze();
  }

  static FSDirectory dir;
  static IndexWriter writer;
  static DirectoryReader reader;
  static IndexSearcher searcher;
  // Arrival order of the ids (an upsert keeps its first place), for hash.
  static List<String> order = new ArrayList<>();
  static Set<String> seen = new HashSet<>();

  /** PreTokenized is a token stream of given terms at given positions. */
  static final class PreTokenized extends TokenStream {
    final CharTermAttribute term = addAttribute(CharTermAttribute.class);
    final PositionIncrementAttribute inc = addAttribute(PositionIncrementAttribute.class);
    final String[] terms;
    final int[] pos;
    int i = 0, last = -1;

    PreTokenized(String[] terms, int[] pos) {
      this.terms = terms;
      this.pos = pos;
    }

    @Override
    public boolean incrementToken() {
      if (i >= terms.length) return false;
      clearAttributes();
      term.setEmpty().append(terms[i]);
      inc.setPositionIncrement(pos[i] - last);
      last = pos[i];
      i++;
      return true;
    }

    @Override
    public void reset() throws IOException {
      super.reset();
      i = 0;
      last = -1;
    }
  }

  /** Merges only when asked (forceMerge), as the bench's other engines. */
  static final class ForcedOnly extends FilterMergePolicy {
    ForcedOnly() {
      super(new TieredMergePolicy());
    }

    @Override
    public MergeSpecification findMerges(MergeTrigger t, SegmentInfos s, MergeContext c) {
      return null;
    }
  }

  static IndexWriterConfig config(IndexWriterConfig.OpenMode mode) {
    IndexWriterConfig c = new IndexWriterConfig(new StandardAnalyzer());
    c.setSimilarity(BM25);
    c.setOpenMode(mode);
    c.setMergePolicy(new ForcedOnly());
    c.setRAMBufferSizeMB(256);
    c.setUseCompoundFile(false);
    return c;
  }

  static void open(String path, boolean create) throws IOException {
    closeAll();
    dir = FSDirectory.open(Paths.get(path));
    writer = new IndexWriter(dir, config(create ? IndexWriterConfig.OpenMode.CREATE : IndexWriterConfig.OpenMode.APPEND));
    if (create) writer.commit();
    refresh();
    order = new ArrayList<>();
    seen = new HashSet<>();
    reopened = !create;
  }

  // reopened is set when the index was opened, not created: the ids'
  // arrival order is then the index's document order before any merge
  // (segments in flush order), read when first needed.
  static boolean reopened;

  static void orderFromIndex() throws IOException {
    for (LeafReaderContext lc : reader.leaves()) {
      LeafReader lr = lc.reader();
      for (int d = 0; d < lr.maxDoc(); d++) {
        if (lr.getLiveDocs() != null && !lr.getLiveDocs().get(d)) continue;
        String id = lr.document(d, Collections.singleton("id")).get("id");
        if (seen.add(id)) order.add(id);
      }
    }
    reopened = false;
  }

  static void refresh() throws IOException {
    DirectoryReader r = reader == null ? DirectoryReader.open(writer) : DirectoryReader.openIfChanged(reader, writer);
    if (r != null) {
      if (reader != null) reader.close();
      reader = r;
      searcher = newSearcher(reader);
    }
  }

  static IndexSearcher newSearcher(IndexReader r) {
    IndexSearcher s = new IndexSearcher(r);
    s.setSimilarity(BM25);
    // No query cache, as the search-benchmark-game's Lucene driver: the
    // warm-up runs every query many times, and Lucene's default
    // LRUQueryCache would then answer the non-scoring COUNT mode of a
    // repeated boolean or phrase query from a cached bitset, timing the
    // cache instead of the engine (ours has no result cache).
    s.setQueryCache(null);
    return s;
  }

  static void closeAll() throws IOException {
    if (reader != null) reader.close();
    if (writer != null) writer.close();
    if (dir != null) dir.close();
    reader = null;
    writer = null;
    dir = null;
    searcher = null;
  }

  static void need() {
    if (writer == null) throw new IllegalStateException("no open index");
  }

  // readUint parses a decimal at p[0] and skips one separator.
  static long readUint(byte[] b, int[] p) {
    int s = p[0];
    long x = 0;
    while (s < b.length && b[s] >= '0' && b[s] <= '9') x = x * 10 + (b[s++] - '0');
    if (s == p[0] || s >= b.length) throw new IllegalArgumentException("batch: bad number");
    p[0] = s + 1;
    return x;
  }

  static void batch(byte[] b) throws IOException {
    int[] p = {0};
    while (p[0] < b.length) {
      if (b[p[0]] != 'D') throw new IllegalArgumentException("batch: bad document header");
      p[0] += 2;
      int idlen = (int) readUint(b, p), titlelen = (int) readUint(b, p), ntok = (int) readUint(b, p);
      String id = new String(b, p[0], idlen, StandardCharsets.UTF_8);
      p[0] += idlen;
      String title = new String(b, p[0], titlelen, StandardCharsets.UTF_8);
      p[0] += titlelen;
      String[] terms = new String[ntok];
      int[] pos = new int[ntok];
      for (int i = 0; i < ntok; i++) {
        pos[i] = (int) readUint(b, p);
        int nl = p[0];
        while (nl < b.length && b[nl] != '\n') nl++;
        terms[i] = new String(b, p[0], nl - p[0], StandardCharsets.UTF_8);
        p[0] = nl + 1;
      }
      Document d = new Document();
      d.add(new StringField("id", id, Field.Store.YES));
      d.add(new StoredField("title", title));
      d.add(new Field("text", new PreTokenized(terms, pos), TEXT));
      writer.updateDocument(new Term("id", id), d);
      if (seen.add(id)) order.add(id);
    }
    writer.commit();
    refresh();
  }

  static Query build(String kind, List<String> t) {
    switch (kind) {
      case "phrase":
        return new PhraseQuery("text", t.toArray(new String[0]));
      case "and":
      case "or": {
        if (t.size() == 1) return new TermQuery(new Term("text", t.get(0)));
        BooleanQuery.Builder b = new BooleanQuery.Builder();
        BooleanClause.Occur o = kind.equals("and") ? BooleanClause.Occur.MUST : BooleanClause.Occur.SHOULD;
        for (String x : t) b.add(new TermQuery(new Term("text", x)), o);
        return b.build();
      }
      default:
        return new TermQuery(new Term("text", t.get(0)));
    }
  }

  static final class Q {
    final String mode, kind;
    final Query query;

    Q(String line) {
      String[] f = line.trim().split(" +");
      int i = 0;
      mode = f[0].equals("top10") || f[0].equals("top10count") || f[0].equals("count") ? f[i++] : "top10count";
      kind = f[i++];
      query = build(kind, Arrays.asList(f).subList(i, f.length));
    }
  }

  static final Set<String> STORED = new HashSet<>(Arrays.asList("id", "title"));

  // run executes one query in mode; the top 10's stored id and title are
  // read (ids collected when ids is not null). Returns the total.
  static long run(IndexSearcher s, String mode, Query q, List<String> ids) throws IOException {
    if (mode.equals("count")) return s.count(q);
    TopScoreDocCollector c = TopScoreDocCollector.create(10, mode.equals("top10") ? 1000 : Integer.MAX_VALUE);
    s.search(q, c);
    TopDocs td = c.topDocs();
    for (ScoreDoc sd : td.scoreDocs) {
      Document d = s.doc(sd.doc, STORED);
      if (ids != null) ids.add(d.get("id"));
    }
    if (!mode.equals("top10") && td.totalHits.relation != TotalHits.Relation.EQUAL_TO)
      throw new IllegalStateException("inexact match count");
    return td.totalHits.value;
  }

  // warm runs rounds of every query until three consecutive rounds are
  // within 3% of each other (at least 10 rounds; at most 500 or maxNs).
  static int warm(List<Q> qs, long maxNs) throws IOException {
    long start = System.nanoTime();
    long[] last = new long[3];
    int r = 0;
    while (r < 500 && (r < 10 || System.nanoTime() - start < maxNs)) {
      long t0 = System.nanoTime();
      for (Q q : qs) run(searcher, q.mode, q.query, null);
      last[r % 3] = System.nanoTime() - t0;
      r++;
      if (r >= 10) {
        long lo = Math.min(last[0], Math.min(last[1], last[2])), hi = Math.max(last[0], Math.max(last[1], last[2]));
        if (hi <= lo * 1.03) break;
      }
    }
    return r;
  }

  static long qps(int clients, long total, List<Q> qs) throws Exception {
    AtomicLong next = new AtomicLong();
    AtomicReference<Throwable> fail = new AtomicReference<>();
    IndexSearcher s = searcher;
    Thread[] ts = new Thread[clients];
    long t0 = System.nanoTime();
    for (int c = 0; c < clients; c++) {
      ts[c] = new Thread(() -> {
        try {
          for (long i; (i = next.getAndIncrement()) < total; ) {
            Q q = qs.get((int) (i % qs.size()));
            run(s, "top10count", q.query, null);
          }
        } catch (Throwable e) {
          fail.compareAndSet(null, e);
        }
      });
      ts[c].start();
    }
    for (Thread t : ts) t.join();
    if (fail.get() != null) throw new IOException("qps: " + fail.get());
    return System.nanoTime() - t0;
  }

  static final class Fnv {
    long h = 0xcbf29ce484222325L;

    void add(byte[] b) {
      for (byte x : b) {
        h ^= (x & 0xff);
        h *= 0x100000001b3L;
      }
    }

    void add(String s) {
      add(s.getBytes(StandardCharsets.UTF_8));
    }
  }

  // hash reads every live document's (position, term) pairs back from the
  // postings of "text" and hashes them in arrival order (see TokenStreamHash
  // in bench/xapianidx.go): "HEX DOCS".
  static String hash() throws IOException {
    if (reopened) orderFromIndex();
    Map<String, long[]> toks = new HashMap<>();
    Map<String, int[]> counts = new HashMap<>();
    List<String> terms = new ArrayList<>();
    Map<BytesRef, Integer> termIdx = new HashMap<>();
    for (LeafReaderContext lc : reader.leaves()) {
      LeafReader lr = lc.reader();
      String[] ids = new String[lr.maxDoc()];
      for (int d = 0; d < lr.maxDoc(); d++)
        if (lr.getLiveDocs() == null || lr.getLiveDocs().get(d)) ids[d] = lr.document(d, Collections.singleton("id")).get("id");
      Terms ts = lr.terms("text");
      if (ts == null) continue;
      TermsEnum te = ts.iterator();
      PostingsEnum pe = null;
      for (BytesRef t; (t = te.next()) != null; ) {
        Integer ti = termIdx.get(t);
        if (ti == null) {
          ti = terms.size();
          BytesRef copy = BytesRef.deepCopyOf(t);
          termIdx.put(copy, ti);
          terms.add(copy.utf8ToString());
        }
        pe = te.postings(pe, PostingsEnum.POSITIONS);
        for (int d; (d = pe.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; ) {
          if (ids[d] == null) continue;
          long[] a = toks.get(ids[d]);
          int[] n = counts.computeIfAbsent(ids[d], k -> new int[1]);
          for (int f = pe.freq(), i = 0; i < f; i++) {
            if (a == null || n[0] == a.length) {
              a = a == null ? new long[16] : Arrays.copyOf(a, a.length * 2);
              toks.put(ids[d], a);
            }
            a[n[0]++] = ((long) pe.nextPosition() << 32) | ti;
          }
        }
      }
    }
    // Term indexes are not in byte order across segments: sort by
    // position, then by the term's bytes.
    Fnv h = new Fnv();
    int docs = 0;
    for (String id : order) {
      boolean live = false;
      for (LeafReaderContext lc : reader.leaves()) {
        if (lc.reader().docFreq(new Term("id", id)) > 0) {
          PostingsEnum p = lc.reader().postings(new Term("id", id));
          for (int d; (d = p.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; )
            if (lc.reader().getLiveDocs() == null || lc.reader().getLiveDocs().get(d)) live = true;
        }
      }
      if (!live) continue;
      docs++;
      h.add(id);
      h.add(new byte[] {1});
      long[] a = toks.get(id);
      int n = a == null ? 0 : counts.get(id)[0];
      Long[] s = new Long[n];
      for (int i = 0; i < n; i++) s[i] = a[i];
      Arrays.sort(s, (x, y) -> {
        int c = Long.compare(x >>> 32, y >>> 32);
        return c != 0 ? c : terms.get((int) (x & 0xffffffffL)).compareTo(terms.get((int) (y & 0xffffffffL)));
      });
      for (Long x : s) {
        h.add(terms.get((int) (x & 0xffffffffL)));
        h.add(new byte[] {0});
        h.add(Long.toString(x >>> 32));
        h.add(new byte[] {'\n'});
      }
    }
    return String.format("%016x %d", h.h, docs);
  }

  static long cpuNs() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  static byte[] readN(InputStream in, int n) throws IOException {
    byte[] b = in.readNBytes(n);
    if (b.length != n) throw new EOFException("short payload");
    return b;
  }

  static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (int c; (c = in.read()) != '\n'; ) {
      if (c < 0) return b.size() == 0 ? null : b.toString(StandardCharsets.UTF_8);
      b.write(c);
    }
    return b.toString(StandardCharsets.UTF_8);
  }

  public static void main(String[] args) throws Exception {
    InputStream in = new BufferedInputStream(System.in, 1 << 20);
    PrintStream out = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false, "UTF-8");
    for (String line; (line = readLine(in)) != null; ) {
      int sp = line.indexOf(' ');
      String cmd = sp < 0 ? line : line.substring(0, sp), arg = sp < 0 ? "" : line.substring(sp + 1);
      StringBuilder r = new StringBuilder();
      try {
        long t0 = System.nanoTime();
        switch (cmd) {
          case "quit":
            closeAll();
            out.print("ok 0\n");
            out.flush();
            return;
          case "create":
          case "open":
            open(arg, cmd.equals("create"));
            r.append("ok ").append(System.nanoTime() - t0);
            break;
          case "close":
            closeAll();
            r.append("ok ").append(System.nanoTime() - t0);
            break;
          case "batch": {
            need();
            byte[] payload = readN(in, Integer.parseInt(arg.trim()));
            t0 = System.nanoTime();
            batch(payload);
            r.append("ok ").append(System.nanoTime() - t0);
            break;
          }
          case "search": {
            need();
            Q q = new Q("top10count " + arg);
            List<String> ids = new ArrayList<>();
            t0 = System.nanoTime();
            long total = run(searcher, "top10count", q.query, ids);
            r.append("ok ").append(System.nanoTime() - t0).append(' ').append(total).append(' ').append(ids.size());
            for (String id : ids) r.append('\n').append(id);
            break;
          }
          case "searchm": {
            need();
            Q q = new Q(arg);
            t0 = System.nanoTime();
            long total = run(searcher, q.mode, q.query, null);
            r.append("ok ").append(System.nanoTime() - t0).append(' ').append(total);
            break;
          }
          case "warm": {
            need();
            String[] f = arg.trim().split(" +");
            int n = Integer.parseInt(f[0]);
            List<Q> qs = new ArrayList<>();
            for (int i = 0; i < n; i++) qs.add(new Q(readLine(in)));
            t0 = System.nanoTime();
            int rounds = warm(qs, Long.parseLong(f[1]) * 1_000_000L);
            r.append("ok ").append(System.nanoTime() - t0).append(' ').append(rounds);
            break;
          }
          case "merge":
            need();
            // The merge reorders documents: note the arrival order first
            // (untimed) when the index was reopened.
            if (reopened) orderFromIndex();
            t0 = System.nanoTime();
            writer.forceMerge(1);
            writer.commit();
            refresh();
            r.append("ok ").append(System.nanoTime() - t0);
            break;
          case "qps": {
            need();
            String[] f = arg.trim().split(" +");
            int clients = Integer.parseInt(f[0]), nq = Integer.parseInt(f[2]);
            long total = Long.parseLong(f[1]);
            List<Q> qs = new ArrayList<>();
            for (int i = 0; i < nq; i++) qs.add(new Q(readLine(in)));
            if (nq == 0 || clients < 1) throw new IllegalArgumentException("qps: no queries");
            r.append("ok ").append(qps(clients, total, qs));
            break;
          }
          case "hash":
            need();
            String h = hash();
            r.append("ok ").append(System.nanoTime() - t0).append(' ').append(h);
            break;
          case "segments":
            need();
            r.append("ok 0 ").append(reader.leaves().size());
            break;
          case "cpu":
            r.append("ok 0 ").append(cpuNs());
            break;
          default:
            throw new IllegalArgumentException("unknown request " + cmd);
        }
      } catch (Throwable e) {
        r.setLength(0);
        r.append("err ").append(String.valueOf(e).replace('\n', ' '));
      }
      out.print(r.append('\n'));
      out.flush();
    }
    closeAll();
  }
}
