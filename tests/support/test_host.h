// A real SSH "remote host" on this machine, for tests of SSH features: a Linux
// network namespace joined to the root namespace by a veth pair (10.213.N.1 on
// the root side, 10.213.N.2 inside), running Debian's /usr/sbin/sshd inside on
// 10.213.N.2:22 with keys and a known_hosts file generated for the test.
// Traffic stays on the veth pair and loopback; host key checking stays on.
#pragma once

#include <QString>
#include <QStringList>
#include <QtTest>

#include <memory>

class QFile;
class QProcess;
class QTemporaryDir;

namespace expnet_test {

class TestHost {
 public:
  TestHost();
  ~TestHost();  // stop()
  TestHost(const TestHost&) = delete;
  TestHost& operator=(const TestHost&) = delete;

  // "" when this machine can make test hosts, else a sentence saying why not.
  static QString unavailableReason();
  static bool required();  // EXPNET_REQUIRE_NETNS=1: tests fail instead of skipping

  // Makes the namespace, keys, configs and sshd, and waits (at most 10 s) until
  // `ssh -F sshConfig() alias true` succeeds. On failure cleans up and says why.
  bool start(const QString& alias, QString* error);
  // Kills everything in the namespace and deletes it and the veth pair. Bounded in time.
  void stop();
  bool isRunning() const;

  QString alias() const;
  QString sshConfig() const;      // client config: callers pass `-F <this>` to ssh
  QStringList sshArgs() const;    // {"-F", sshConfig()}
  QString address() const;        // 10.213.N.2
  QString rootAddress() const;    // 10.213.N.1: this (the root) namespace's end of the veth pair
  QString namespaceName() const;  // expnet-t<pid>-<N>
  QString workDir() const;        // a folder for the host's files, removed with the host
  QString sshdLog() const;        // sshd's stderr so far (LogLevel VERBOSE)
  QString lastError() const;      // why the last cutLink/restoreLink/replaceHostKey failed

  // Takes the link down: packets to the host are dropped on the veth pair, so
  // new connections time out and open ones stall (no reset, nothing leaves the machine).
  bool cutLink();
  // Brings the link back and waits (at most 10 s) until ssh works again.
  bool restoreLink();
  // Restarts sshd with a new host key; known_hosts keeps the old one, so clients are refused.
  bool replaceHostKey();
  // Mounts a tmpfs of `size` (e.g. "512k") on `dir` as the host's programs see it: in sshd's
  // mount namespace (`ip netns exec` gave it its own), which goes with the host's last program.
  bool mountSmallDisk(const QString& dir, const QString& size);

  // Runs `ssh -F sshConfig() -- alias remoteArgs...` (stdin empty) and returns its stdout.
  // exitCode is ssh's (255 for ssh's own errors), -1 on timeout.
  QString runSsh(const QStringList& remoteArgs, int* exitCode, QString* err, int timeoutMs = 20000);

 private:
  QString file(const QString& name) const;
  bool claimNumber(QString* error);
  bool makeNetwork(QString* error);
  bool makeHostKey(QString* error);
  bool makeClientFiles(QString* error);
  bool writeSshdConfig(QString* error);
  bool startSshd(QString* error);
  void stopSshd();
  bool waitUntilSshWorks(int timeoutMs, QString* error);
  bool waitUntilHostKeyServed(int timeoutMs, QString* error);
  bool fail(const QString& why);

  QString alias_, ns_, hostVeth_, nsVeth_, address_, lastError_;
  int n_ = 0;
  std::unique_ptr<QTemporaryDir> tmp_;
  std::unique_ptr<QProcess> sshd_;
  std::unique_ptr<QFile> lock_;  // flock()ed: claims N against other tests; the kernel drops it if we die
};

// Files named PWNED under `root` (recursively), in the working folder and in the
// temporary folder: what a hostile name run by a shell would have made.
QStringList pwnedFiles(const QString& root);

// A shapes training config of a tiny model that trains in seconds a few hundred
// steps (5 batches of 8 an epoch), named `name` (any text: it is JSON-escaped).
QByteArray tinyShapesRecipe(const QString& name, int seed, int epochs);

// Captions a test image with checkpoint `home` here and with `there` on the host
// (over ssh, through a plain-named link in its work folder). Returns "" with
// both captions set, or what failed.
QString captionHereAndThere(TestHost& host, const QString& home, const QString& there, QString* here, QString* remote);

}  // namespace expnet_test

// Skips (fails under EXPNET_REQUIRE_NETNS=1) the current test function when
// this machine cannot make test hosts.
#define EXPNET_REQUIRE_TEST_HOSTS()                                                            \
  do {                                                                                         \
    const QString expnetWhy = expnet_test::TestHost::unavailableReason();                      \
    if (!expnetWhy.isEmpty()) {                                                                \
      const QString expnetMsg = QStringLiteral("EXPNET_TEST_HOSTS_UNAVAILABLE: ") + expnetWhy; \
      if (expnet_test::TestHost::required()) QFAIL(qPrintable(expnetMsg));                     \
      QSKIP(qPrintable(expnetMsg));                                                            \
    }                                                                                          \
  } while (0)

// In a test's initTestCase: skips (fails under EXPNET_REQUIRE_NETNS=1) when this
// machine cannot make test hosts, else starts one named `alias` into `holder` (a
// std::unique_ptr<TestHost>), failing with the reason when it does not start.
#define EXPNET_START_TEST_HOST(holder, alias)                                           \
  do {                                                                                  \
    EXPNET_REQUIRE_TEST_HOSTS();                                                        \
    holder = std::make_unique<expnet_test::TestHost>();                                 \
    QString expnetStartError;                                                           \
    QVERIFY2(holder->start(QStringLiteral(alias), &expnetStartError), qPrintable(expnetStartError)); \
  } while (0)
