// TLS for the HTTP server through OpenSSL: a server certificate and key, and
// optionally a client CA. With a client CA, client certificates are verified
// against it (required, or only when presented); a connection whose
// certificate fails verification is refused at the handshake.
#pragma once

#include <memory>
#include <string>

#include "berth/common/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace berth::http {

struct TlsOptions {
  std::string cert_file;       // PEM, the server certificate (chain)
  std::string key_file;        // PEM, its private key
  std::string client_ca_file;  // PEM; "" = no client certificates asked
  bool require_client_cert = false;  // with a client CA: refuse clients without one
};

class TlsContext {
 public:
  static StatusOr<std::unique_ptr<TlsContext>> Create(const TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A server-side session on a connected non-blocking socket (nullptr on failure).
  SSL* NewSession(int fd) const;

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// The verified client certificate of a finished handshake: its subject
// (RFC 2253) and common name; false when none was presented or it did not verify.
bool VerifiedPeer(SSL* ssl, std::string* subject, std::string* common_name);

// The last OpenSSL errors as text (and clears them).
std::string TlsErrors();

}  // namespace berth::http
