// The server on a loopback port with raw sockets: keep-alive and pipelining,
// 404/405/OPTIONS/HEAD, header deadlines (408, the worker pool untouched),
// connection limits, body limits while reading, handler exceptions, and TLS
// with a verified client certificate (certificates made with the openssl
// command; the TLS case is skipped without it).
#include "berth/http/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace berth::http {
namespace {

int Connect(int port, const char* from = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (from) {
    sockaddr_in src{};
    src.sin_family = AF_INET;
    inet_pton(AF_INET, from, &src.sin_addr);
    ::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Reads until the peer closes, `count` answers are complete, or 10 s pass.
std::string ReadAnswers(int fd, int count = 1) {
  std::string out;
  char buf[4096];
  for (int waited = 0; waited < 100;) {
    int answers = 0;
    size_t pos = 0;
    while ((pos = out.find("\r\n\r\n", pos)) != std::string::npos) {
      const size_t head_start = out.rfind("HTTP/1.1 ", pos);
      const size_t cl = out.find("Content-Length: ", head_start);
      size_t len = 0;
      if (cl != std::string::npos && cl < pos) len = std::stoul(out.substr(cl + 16));
      if (out.size() < pos + 4 + len) break;
      ++answers;
      pos += 4 + len;
    }
    if (answers >= count) return out;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) == 0) {
      ++waited;
      continue;
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int Status(const std::string& answer) {
  if (answer.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::atoi(answer.c_str() + 9);
}

class ServerTest : public ::testing::Test {
 protected:
  void Serve(ServerOptions o) {
    o.host = "127.0.0.1";
    o.port = 0;
    server_ = std::make_unique<Server>(o);
    server_->Get("/healthz", [](const Request&, Response& res) { res.set_content("ok", "text/plain"); }, RunOn::kOnLoop);
    server_->Get(R"(/items/(\d+))", [](const Request& req, Response& res) {
      res.set_content("item " + std::string(req.matches[1]), "text/plain");
    });
    server_->Delete(R"(/items/(\d+))", [](const Request&, Response& res) { res.status = 204; });
    server_->Post("/echo", [this](const Request& req, Response& res) {
      ++handled_;
      res.set_content(req.body, "text/plain");
    });
    server_->Get("/throw", [](const Request&, Response&) { throw std::runtime_error("boom"); });
    server_->Get("/heavy", [this](const Request&, Response& res) {
      while (hold_heavy_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      res.set_content("heavy", "text/plain");
    }, RunOn::kHeavy);
    server_->Get("/peer", [](const Request& req, Response& res) {
      res.set_content(std::string(req.peer_verified ? "verified " : "anonymous ") + req.peer_common_name, "text/plain");
    });
    server_->set_error_handler([](const Request&, Response& res) { res.set_content("E:" + res.error, "text/plain"); });
    ASSERT_TRUE(server_->Bind().ok());
    server_->Start();
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  std::string Roundtrip(const std::string& request, int count = 1) {
    int fd = Connect(server_->port());
    SendAll(fd, request);
    std::string out = ReadAnswers(fd, count);
    ::close(fd);
    return out;
  }
  std::unique_ptr<Server> server_;
  std::atomic<int> handled_{0};
  std::atomic<bool> hold_heavy_{false};  // /heavy answers only once this is false
};

TEST_F(ServerTest, KeepAlivePipeliningAndRoutes) {
  Serve({});
  const std::string out = Roundtrip(
      "GET /items/7 HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
      "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n",
      3);
  EXPECT_NE(out.find("item 7"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\n\r\nabc"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\n\r\nde"), std::string::npos) << out;
  EXPECT_EQ(Status(Roundtrip("GET /nothing HTTP/1.1\r\n\r\n")), 404);
  const std::string put = Roundtrip("PUT /items/1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(Status(put), 405);
  EXPECT_NE(put.find("Allow: GET, DELETE, HEAD, OPTIONS"), std::string::npos) << put;
  EXPECT_NE(put.find("E:PUT /items/1: method not allowed"), std::string::npos) << put;
  EXPECT_EQ(Status(Roundtrip("OPTIONS /echo HTTP/1.1\r\n\r\n")), 204);
  const std::string head = Roundtrip("HEAD /items/3 HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(Status(head), 200);
  EXPECT_EQ(head.find("item 3"), std::string::npos);
  EXPECT_EQ(Status(Roundtrip("GET /throw HTTP/1.1\r\n\r\n")), 500);
  EXPECT_EQ(Status(Roundtrip("GET /items/1 HTTP/3.0\r\n\r\n")), 505);
  EXPECT_EQ(Status(Roundtrip("GET /items/1 HTTQ/1.1\r\n\r\n")), 400);
}

TEST_F(ServerTest, LimitsAnsweredWhileReading) {
  ServerOptions o;
  o.limits.max_body_bytes = 1000;
  Serve(o);
  // Content-Length over the limit, negative, huge: answered before any body.
  EXPECT_EQ(Status(Roundtrip("POST /echo HTTP/1.1\r\nContent-Length: 1001\r\n\r\n")), 413);
  EXPECT_EQ(Status(Roundtrip("POST /echo HTTP/1.1\r\nContent-Length: -5\r\n\r\n")), 400);
  EXPECT_EQ(Status(Roundtrip("POST /echo HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n")), 413);
  // A chunked body passing the limit, sent without end: 413 at once.
  int fd = Connect(server_->port());
  SendAll(fd, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  for (int i = 0; i < 3; ++i) SendAll(fd, "190\r\n" + std::string(400, 'a') + "\r\n");
  EXPECT_EQ(Status(ReadAnswers(fd)), 413);
  ::close(fd);
  EXPECT_EQ(Status(Roundtrip("GET /healthz HTTP/1.1\r\nX: " + std::string(64 << 10, 'a') + "\r\n\r\n")), 431);
  // Expect: 100-continue gets the interim answer, then the final one.
  fd = Connect(server_->port());
  SendAll(fd, "POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  std::string interim = ReadAnswers(fd);
  EXPECT_EQ(interim.rfind("HTTP/1.1 100 Continue", 0), 0u) << interim;
  SendAll(fd, "hi");
  std::string rest = ReadAnswers(fd);
  EXPECT_NE(rest.find("\r\n\r\nhi"), std::string::npos) << rest;
  ::close(fd);
  EXPECT_EQ(handled_.load(), 1);
}

TEST_F(ServerTest, BodyLimitsPerRoute) {
  ServerOptions o;
  o.limits.max_body_bytes = 10'000;
  o.small_body_bytes = 100;
  Serve(o);
  // POST routes take the large limit; GET, DELETE and unknown paths the small one.
  const std::string body(5'000, 'b');
  EXPECT_EQ(Status(Roundtrip("POST /echo HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + body)), 200);
  EXPECT_EQ(Status(Roundtrip("GET /items/1 HTTP/1.1\r\nContent-Length: 101\r\n\r\n")), 413);
  EXPECT_EQ(Status(Roundtrip("DELETE /items/1 HTTP/1.1\r\nContent-Length: 5000\r\n\r\n")), 413);
  EXPECT_EQ(Status(Roundtrip("POST /nothing HTTP/1.1\r\nContent-Length: 5000\r\n\r\n")), 413);
  EXPECT_EQ(Status(Roundtrip("GET /items/1 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")), 200);
  EXPECT_EQ(handled_.load(), 1);
}

TEST_F(ServerTest, SlowHeadersGet408AndNeverHoldAWorker) {
  ServerOptions o;
  o.workers = 1;
  o.header_timeout = std::chrono::milliseconds(300);
  o.max_connections_per_client = 1000;
  Serve(o);
  // Many connections that never finish their headers.
  std::vector<int> slow;
  for (int i = 0; i < 50; ++i) {
    int fd = Connect(server_->port());
    SendAll(fd, "GET /items/1 HTTP/1.1\r\nX-Slow: 1\r\n");
    slow.push_back(fd);
  }
  // The one worker still serves complete requests at once.
  const std::string ok = Roundtrip("POST /echo HTTP/1.1\r\nContent-Length: 1\r\n\r\nz");
  EXPECT_EQ(Status(ok), 200) << ok;
  for (int fd : slow) {
    const std::string answer = ReadAnswers(fd);
    EXPECT_EQ(Status(answer), 408) << answer;
    ::close(fd);
  }
  EXPECT_GE(server_->stats().timed_out.load(), 50u);
}

TEST_F(ServerTest, HeavyRoutesNeverHoldTheWorkers) {
  ServerOptions o;
  o.workers = 1;
  o.heavy_workers = 1;
  Serve(o);
  hold_heavy_ = true;
  // Heavy requests that cannot finish: one runs, the others wait in their own queue.
  std::vector<int> heavy;
  for (int i = 0; i < 4; ++i) {
    int fd = Connect(server_->port());
    SendAll(fd, "GET /heavy HTTP/1.1\r\nHost: x\r\n\r\n");
    heavy.push_back(fd);
  }
  // The one ordinary worker answers at once meanwhile.
  const std::string ok = Roundtrip("POST /echo HTTP/1.1\r\nContent-Length: 1\r\n\r\nz");
  EXPECT_EQ(Status(ok), 200) << ok;
  hold_heavy_ = false;
  for (int fd : heavy) {
    const std::string answer = ReadAnswers(fd);
    EXPECT_EQ(Status(answer), 200) << answer;
    ::close(fd);
  }
}

TEST_F(ServerTest, ConnectionLimitPerClient) {
  ServerOptions o;
  o.max_connections_per_client = 4;
  Serve(o);
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) held.push_back(Connect(server_->port()));
  // Let the loop accept them before the fifth.
  ASSERT_EQ(Status(ReadAnswers([&] {
              SendAll(held[0], "GET /healthz HTTP/1.1\r\n\r\n");
              return held[0];
            }())),
            200);
  const std::string refused = Roundtrip("GET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(Status(refused), 429) << refused;
  // Another client address is not affected (loopback answers on all of 127/8).
  int other = Connect(server_->port(), "127.0.0.2");
  ASSERT_GE(other, 0);
  SendAll(other, "GET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(Status(ReadAnswers(other)), 200);
  ::close(other);
  for (int fd : held) ::close(fd);
  EXPECT_GE(server_->stats().refused_client_limit.load(), 1u);
}

// TLS with a client CA: a client certificate is verified and its name seen
// by handlers; without one the connection still works, as anonymous.
TEST_F(ServerTest, TlsWithClientCertificates) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl command";
  const std::string dir = ::testing::TempDir() + "/berth-tls-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string script =
      "cd " + dir + " && "
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.crt && "
      "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr && "
      "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -out server.crt && "
      "openssl req -newkey rsa:2048 -nodes -subj /CN=kube-scheduler -keyout client.key -out client.csr && "
      "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -out client.crt";
  ASSERT_EQ(std::system(("(" + script + ") >/dev/null 2>&1").c_str()), 0);
  ServerOptions o;
  o.tls = true;
  o.tls_options = {dir + "/server.crt", dir + "/server.key", dir + "/ca.crt", false};
  Serve(o);

  auto fetch = [&](bool with_cert) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx, (dir + "/ca.crt").c_str(), nullptr);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (with_cert) {
      SSL_CTX_use_certificate_file(ctx, (dir + "/client.crt").c_str(), SSL_FILETYPE_PEM);
      SSL_CTX_use_PrivateKey_file(ctx, (dir + "/client.key").c_str(), SSL_FILETYPE_PEM);
    }
    int fd = Connect(server_->port());
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    std::string out;
    if (SSL_connect(ssl) == 1) {
      const std::string req = "GET /peer HTTP/1.1\r\nConnection: close\r\n\r\n";
      SSL_write(ssl, req.data(), static_cast<int>(req.size()));
      char buf[4096];
      int n;
      while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ::close(fd);
    return out;
  };
  const std::string verified = fetch(true);
  EXPECT_EQ(Status(verified), 200) << verified;
  EXPECT_NE(verified.find("verified kube-scheduler"), std::string::npos) << verified;
  const std::string anonymous = fetch(false);
  EXPECT_NE(anonymous.find("anonymous"), std::string::npos) << anonymous;
  // Plain HTTP on the TLS port is not answered as HTTP.
  EXPECT_EQ(Status(Roundtrip("GET /peer HTTP/1.1\r\n\r\n")), 0);

  // Client certificates required: a client without one is refused at the handshake.
  server_->Stop();
  o.tls_options.require_client_cert = true;
  Serve(o);
  const std::string with_cert = fetch(true);
  EXPECT_EQ(Status(with_cert), 200) << with_cert;
  EXPECT_EQ(fetch(false), "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace berth::http
