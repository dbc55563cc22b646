// driver.cc drives Xapian 1.4 (glass backend) for summa-bench: a
// line-oriented protocol on stdin/stdout, one request at a time. Every
// reply starts "ok NS ..." where NS is the wall time in nanoseconds the
// operation took inside this process (the pipe round trip is excluded, so
// the figures compare with the in-process Go engines), or "err MESSAGE".
//
// Requests:
//   create DIR | open DIR      a WritableDatabase (created empty / opened)
//   close                      close it
//   batch NBYTES\n<payload>    replace_document each document, commit
//   search KIND T1 T2 ...      top 10 by BM25 with exact totalHits; reply
//                              "ok NS TOTAL K" then K id lines
//   searchm MODE KIND T1 ...   one search in MODE: top10 (get_mset(0, 10),
//                              Xapian's default check_at_least, so an
//                              estimated count), top10count (as search),
//                              count (get_mset(0, 0, doccount): exact);
//                              reply "ok NS TOTAL"
//   merge                      Database::compact into DIR.compact, fsync,
//                              swap it in place of DIR and reopen
//   qps CLIENTS TOTAL NQ\n<NQ lines "KIND T1 T2 ...">
//                              TOTAL queries from CLIENTS threads, each
//                              with its own read-only Database
//   hash                       FNV-1a 64 of every document's token stream
//                              (id, then (position, term) in position
//                              order), in docid order: "ok NS HEX DOCS"
//   cpu                        "ok 0 CPUNS": this process's CPU time
//   quit
//
// The payload of batch is, per document: "D IDLEN TITLELEN NTOK\n", the id
// and the title bytes, then NTOK lines "POS TERM\n". The Go side tokenizes
// (engine/analysis.Tokenize), so the terms and positions are ours by
// construction; the id is the unique term "Q"+id and the document data is
// "id\ntitle" (stored fields, read back for the top 10 of every search).
#include <xapian.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

Xapian::WritableDatabase *db = nullptr;
std::string dbdir;

// BM25 with Lucene's (and our) k1 = 1.2, b = 0.75; Xapian's defaults for
// the rest (k2 = 0, k3 = 1, min_normlen = 0.5).
Xapian::BM25Weight bm25() { return Xapian::BM25Weight(1.2, 0, 1, 0.75, 0.5); }

long long since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count();
}

std::string oneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

Xapian::Query build(const std::string &kind, const std::vector<std::string> &t) {
  if (kind == "phrase") return Xapian::Query(Xapian::Query::OP_PHRASE, t.begin(), t.end(), t.size());
  if (kind == "and") return Xapian::Query(Xapian::Query::OP_AND, t.begin(), t.end());
  if (t.size() == 1) return Xapian::Query(t[0]);
  return Xapian::Query(Xapian::Query::OP_OR, t.begin(), t.end());
}

// runQuery returns the exact number of matches and the top 10 ids: with
// check_at_least = the document count the matcher counts every match.
Xapian::doccount runQuery(const Xapian::Database &d, const std::string &kind,
                          const std::vector<std::string> &terms, std::vector<std::string> *ids) {
  Xapian::Enquire enq(d);
  enq.set_weighting_scheme(bm25());
  enq.set_query(build(kind, terms));
  Xapian::MSet m = enq.get_mset(0, 10, d.get_doccount());
  if (m.get_matches_lower_bound() != m.get_matches_upper_bound())
    throw std::runtime_error("inexact match count");
  for (Xapian::MSetIterator it = m.begin(); it != m.end(); ++it) {
    std::string data = it.get_document().get_data();
    if (ids) ids->push_back(data.substr(0, data.find('\n')));
  }
  return m.get_matches_estimated();
}

// runMode runs one query in a search-benchmark-game mode and returns its
// total (an estimate in top10).
Xapian::doccount runMode(const Xapian::Database &d, const std::string &mode, const std::string &kind,
                         const std::vector<std::string> &terms) {
  if (mode == "top10count") return runQuery(d, kind, terms, nullptr);
  Xapian::Enquire enq(d);
  enq.set_weighting_scheme(bm25());
  enq.set_query(build(kind, terms));
  if (mode == "count") {
    Xapian::MSet m = enq.get_mset(0, 0, d.get_doccount());
    if (m.get_matches_lower_bound() != m.get_matches_upper_bound())
      throw std::runtime_error("inexact match count");
    return m.get_matches_estimated();
  }
  if (mode != "top10") throw std::runtime_error("unknown mode " + mode);
  Xapian::MSet m = enq.get_mset(0, 10);
  for (Xapian::MSetIterator it = m.begin(); it != m.end(); ++it) it.get_document().get_data();
  return m.get_matches_estimated();
}

void splitQuery(const std::string &line, std::string *kind, std::vector<std::string> *terms) {
  std::istringstream in(line);
  in >> *kind;
  std::string t;
  while (in >> t) terms->push_back(t);
}

int removeEntry(const char *p, const struct stat *, int, struct FTW *) { return remove(p); }

void removeAll(const std::string &p) {
  struct stat st;
  if (stat(p.c_str(), &st) == 0) nftw(p.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
}

void fsyncPath(const std::string &p) {
  int fd = open(p.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("open " + p + ": " + strerror(errno));
  int rc = fsync(fd);
  close(fd);
  if (rc != 0) throw std::runtime_error("fsync " + p + ": " + strerror(errno));
}

// fsyncTree syncs every file of dir and dir itself.
void fsyncTree(const std::string &dir) {
  DIR *d = opendir(dir.c_str());
  if (!d) throw std::runtime_error("opendir " + dir);
  std::vector<std::string> names;
  while (struct dirent *e = readdir(d))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  closedir(d);
  for (const auto &n : names) fsyncPath(dir + "/" + n);
  fsyncPath(dir);
}

std::string parentOf(const std::string &p) {
  size_t i = p.find_last_of('/');
  return i == std::string::npos ? "." : (i == 0 ? "/" : p.substr(0, i));
}

struct Fnv {
  uint64_t h = 14695981039346656037ULL;
  void add(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
      h ^= static_cast<unsigned char>(p[i]);
      h *= 1099511628211ULL;
    }
  }
  void add(const std::string &s) { add(s.data(), s.size()); }
};

// readUint parses a decimal at *p, advancing past it and one separator.
bool readUint(const char **p, const char *end, uint64_t *v) {
  const char *s = *p;
  uint64_t x = 0;
  while (s < end && *s >= '0' && *s <= '9') x = x * 10 + (*s++ - '0');
  if (s == *p || s >= end) return false;
  *v = x;
  *p = s + 1;
  return true;
}

void batch(const std::string &payload) {
  const char *p = payload.data(), *end = p + payload.size();
  while (p < end) {
    if (*p != 'D' || p + 2 > end) throw std::runtime_error("batch: bad document header");
    p += 2;
    uint64_t idlen, titlelen, ntok;
    if (!readUint(&p, end, &idlen) || !readUint(&p, end, &titlelen) || !readUint(&p, end, &ntok) ||
        static_cast<uint64_t>(end - p) < idlen + titlelen)
      throw std::runtime_error("batch: bad document header");
    std::string id(p, idlen);
    p += idlen;
    std::string title(p, titlelen);
    p += titlelen;
    Xapian::Document doc;
    doc.set_data(id + "\n" + title);
    std::string idterm = "Q" + id;
    doc.add_boolean_term(idterm);
    for (uint64_t i = 0; i < ntok; i++) {
      uint64_t pos;
      if (!readUint(&p, end, &pos)) throw std::runtime_error("batch: bad token");
      const char *nl = static_cast<const char *>(memchr(p, '\n', end - p));
      if (!nl) throw std::runtime_error("batch: bad token");
      doc.add_posting(std::string(p, nl - p), static_cast<Xapian::termpos>(pos));
      p = nl + 1;
    }
    db->replace_document(idterm, doc);
  }
  db->commit();
}

std::string hashAll(Xapian::doccount *docs) {
  Fnv f;
  *docs = 0;
  for (Xapian::PostingIterator d = db->postlist_begin(""); d != db->postlist_end(""); ++d) {
    Xapian::Document doc = db->get_document(*d);
    std::string data = doc.get_data();
    std::vector<std::pair<Xapian::termpos, std::string>> toks;
    for (Xapian::TermIterator t = doc.termlist_begin(); t != doc.termlist_end(); ++t)
      for (Xapian::PositionIterator q = db->positionlist_begin(*d, *t); q != db->positionlist_end(*d, *t); ++q)
        toks.emplace_back(*q, *t);
    std::sort(toks.begin(), toks.end());
    f.add(data.substr(0, data.find('\n')));
    f.add("\x01", 1);
    for (const auto &tk : toks) {
      f.add(tk.second);
      f.add("\0", 1);
      f.add(std::to_string(tk.first));
      f.add("\n", 1);
    }
    ++*docs;
  }
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(f.h));
  return buf;
}

long long cpuNs() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

void needDB() {
  if (!db) throw std::runtime_error("no open database");
}

void closeDB() {
  if (db) {
    db->close();
    delete db;
    db = nullptr;
  }
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::string cmd = line.substr(0, line.find(' '));
    std::string arg = line.size() > cmd.size() ? line.substr(cmd.size() + 1) : "";
    std::ostringstream out;
    try {
      Clock::time_point t0 = Clock::now();
      if (cmd == "quit") {
        closeDB();
        std::cout << "ok 0\n" << std::flush;
        return 0;
      } else if (cmd == "create" || cmd == "open") {
        closeDB();
        dbdir = arg;
        int flags = Xapian::DB_BACKEND_GLASS | (cmd == "create" ? Xapian::DB_CREATE_OR_OVERWRITE : Xapian::DB_OPEN);
        db = new Xapian::WritableDatabase(dbdir, flags);
        out << "ok " << since(t0);
      } else if (cmd == "close") {
        closeDB();
        out << "ok " << since(t0);
      } else if (cmd == "batch") {
        needDB();
        size_t n = std::stoull(arg);
        std::string payload(n, '\0');
        if (!std::cin.read(&payload[0], n)) throw std::runtime_error("batch: short payload");
        t0 = Clock::now();
        batch(payload);
        out << "ok " << since(t0);
      } else if (cmd == "search") {
        needDB();
        std::string kind;
        std::vector<std::string> terms, ids;
        splitQuery(arg, &kind, &terms);
        Xapian::doccount total = runQuery(*db, kind, terms, &ids);
        out << "ok " << since(t0) << " " << total << " " << ids.size();
        for (const auto &id : ids) out << "\n" << id;
      } else if (cmd == "searchm") {
        needDB();
        std::string mode = arg.substr(0, arg.find(' '));
        std::string kind;
        std::vector<std::string> terms;
        splitQuery(arg.size() > mode.size() ? arg.substr(mode.size() + 1) : "", &kind, &terms);
        t0 = Clock::now();
        Xapian::doccount total = runMode(*db, mode, kind, terms);
        out << "ok " << since(t0) << " " << total;
      } else if (cmd == "merge") {
        needDB();
        std::string tmp = dbdir + ".compact";
        removeAll(tmp);
        db->compact(tmp);
        fsyncTree(tmp);
        closeDB();
        removeAll(dbdir);
        if (rename(tmp.c_str(), dbdir.c_str()) != 0) throw std::runtime_error("rename: " + std::string(strerror(errno)));
        fsyncPath(parentOf(dbdir));
        db = new Xapian::WritableDatabase(dbdir, Xapian::DB_BACKEND_GLASS | Xapian::DB_OPEN);
        out << "ok " << since(t0);
      } else if (cmd == "qps") {
        needDB();
        std::istringstream in(arg);
        long clients = 0, total = 0, nq = 0;
        in >> clients >> total >> nq;
        std::vector<std::pair<std::string, std::vector<std::string>>> qs(nq);
        for (long i = 0; i < nq; i++) {
          std::string q;
          std::getline(std::cin, q);
          splitQuery(q, &qs[i].first, &qs[i].second);
        }
        if (nq == 0 || clients < 1) throw std::runtime_error("qps: no queries");
        std::atomic<long> next(0);
        std::atomic<bool> failed(false);
        std::string failure;
        t0 = Clock::now();
        std::vector<std::thread> ts;
        for (long c = 0; c < clients; c++)
          ts.emplace_back([&]() {
            try {
              Xapian::Database rd(dbdir);
              for (long i; (i = next.fetch_add(1)) < total;) runQuery(rd, qs[i % nq].first, qs[i % nq].second, nullptr);
            } catch (const std::exception &e) {
              if (!failed.exchange(true)) failure = e.what();
            } catch (const Xapian::Error &e) {
              if (!failed.exchange(true)) failure = e.get_description();
            }
          });
        for (auto &t : ts) t.join();
        if (failed) throw std::runtime_error("qps: " + failure);
        out << "ok " << since(t0);
      } else if (cmd == "hash") {
        needDB();
        Xapian::doccount docs;
        std::string h = hashAll(&docs);
        out << "ok " << since(t0) << " " << h << " " << docs;
      } else if (cmd == "cpu") {
        out << "ok 0 " << cpuNs();
      } else if (cmd == "doccount") {
        needDB();
        out << "ok 0 " << db->get_doccount();
      } else {
        throw std::runtime_error("unknown request " + cmd);
      }
    } catch (const Xapian::Error &e) {
      out.str("");
      out << "err " << oneLine(e.get_description());
    } catch (const std::exception &e) {
      out.str("");
      out << "err " << oneLine(e.what());
    }
    std::cout << out.str() << "\n" << std::flush;
  }
  closeDB();
  return 0;
}
