#include "support/test_host.h"

#include "support/fixtures.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QThread>

#include <cerrno>

#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace expnet_test {
namespace {

const QString kSshd = QStringLiteral("/usr/sbin/sshd");
const QString kLockDir = QStringLiteral("/run/expnet-test-hosts");
const int kWaitMs = 10000;

struct Run {
  int code = -1;  // -1: could not start, timed out or crashed
  QString out, err;
};

// Runs a program to completion with empty stdin (ssh would otherwise wait on our stdin).
Run run(const QString& program, const QStringList& args, int timeoutMs = 10000) {
  Run r;
  QProcess p;
  p.setStandardInputFile(QProcess::nullDevice());
  p.start(program, args);
  if (!p.waitForStarted(5000)) {
    r.err = program + QStringLiteral(": ") + p.errorString();
    return r;
  }
  const bool finished = p.waitForFinished(timeoutMs);
  if (!finished) {
    p.kill();
    p.waitForFinished(2000);
  }
  r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
  r.err = QString::fromLocal8Bit(p.readAllStandardError());
  if (!finished)
    r.err += QStringLiteral("\n%1 timed out after %2 ms").arg(program).arg(timeoutMs);
  else if (p.exitStatus() == QProcess::NormalExit)
    r.code = p.exitCode();
  return r;
}

// ip and sshd live in sbin, which a non-root PATH may lack.
QString tool(const QString& name) {
  const QString found = QStandardPaths::findExecutable(name);
  if (!found.isEmpty()) return found;
  return QStandardPaths::findExecutable(name, {"/usr/sbin", "/usr/bin", "/sbin", "/bin"});
}

Run ip(const QStringList& args, int timeoutMs = 10000) { return run(tool("ip"), args, timeoutMs); }

QString describe(const Run& r) {
  const QString err = r.err.trimmed();
  return err.isEmpty() ? QStringLiteral("exit code %1").arg(r.code) : err;
}

QString readText(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

bool writeText(const QString& path, const QString& text, QString* error) {
  QFile f(path);
  if (f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text.toUtf8()) >= 0) return true;
  *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
  return false;
}

Run keygen(const QString& path, const QString& comment) {
  return run(tool("ssh-keygen"), {"-q", "-t", "ed25519", "-N", QString(), "-C", comment, "-f", path});
}

QString currentUser() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw ? QString::fromLocal8Bit(pw->pw_name) : QStringLiteral("root");
}

bool processExists(qint64 pid) { return ::kill(pid_t(pid), 0) == 0 || errno == EPERM; }

// Kills every process in the namespace (sshd's sessions outlive sshd) and deletes it;
// the veth pair goes with it, since one end lives inside.
void removeNamespace(const QString& ns) {
  const QDeadlineTimer deadline(3000);
  for (;;) {
    const QStringList pids = ip({"netns", "pids", ns}, 3000).out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    if (pids.isEmpty() || deadline.hasExpired()) break;
    for (const QString& text : pids) {
      const int pid = text.trimmed().toInt();
      if (pid > 1 && pid != ::getpid()) ::kill(pid, SIGKILL);  // never 0 or -1: those mean "everyone"
    }
    QThread::msleep(50);
  }
  ip({"netns", "del", ns}, 5000);
}

// Leftovers of test processes that crashed or were killed (pid gone): namespaces
// expnet-t<pid>-* and temporary folders expnet-host-<pid>-*.
void removeStaleLeftovers() {
  static const QRegularExpression ours(QStringLiteral("^expnet-(?:t|host-)(\\d+)-\\S+$"));
  for (const QString& line : ip({"netns", "list"}).out.split(QLatin1Char('\n'))) {
    const QRegularExpressionMatch m = ours.match(line.section(QLatin1Char(' '), 0, 0));
    if (m.hasMatch() && !processExists(m.captured(1).toLongLong())) removeNamespace(m.captured(0));
  }
  const QDir tmp = QDir::temp();
  for (const QString& name : tmp.entryList({"expnet-host-*"}, QDir::Dirs)) {
    const QRegularExpressionMatch m = ours.match(name);
    if (m.hasMatch() && !processExists(m.captured(1).toLongLong())) QDir(tmp.filePath(name)).removeRecursively();
  }
}

QString probeReason() {
  if (::geteuid() != 0) return QStringLiteral("needs root to make network namespaces (run the tests as root)");
  if (tool("ip").isEmpty()) return QStringLiteral("needs `ip` (package iproute2) to make network namespaces");
  if (!QFileInfo(kSshd).isExecutable())
    return QStringLiteral("needs /usr/sbin/sshd (package openssh-server; see packaging/install-test-hosts.sh)");
  for (const char* name : {"ssh", "ssh-keygen", "ssh-keyscan"}) {
    if (tool(QString::fromLatin1(name)).isEmpty())
      return QStringLiteral("needs %1 (package openssh-client)").arg(QString::fromLatin1(name));
  }
  // Root is not enough in a container without CAP_SYS_ADMIN: try making one.
  const QString probe = QStringLiteral("expnet-t%1-probe").arg(::getpid());
  const Run made = ip({"netns", "add", probe});
  if (made.code != 0) return QStringLiteral("cannot make a network namespace here (%1)").arg(describe(made));
  ip({"netns", "del", probe});
  return {};
}

}  // namespace

TestHost::TestHost() = default;
TestHost::~TestHost() { stop(); }

QString TestHost::unavailableReason() {
  static const QString reason = probeReason();
  return reason;
}

bool TestHost::required() { return qEnvironmentVariable("EXPNET_REQUIRE_NETNS") == QLatin1String("1"); }

bool TestHost::start(const QString& alias, QString* error) {
  QString why;
  if (tmp_)
    why = QStringLiteral("this TestHost is already started; stop() it first");
  else if (alias.isEmpty() || alias.contains(QRegularExpression(QStringLiteral("[\\s#*?!\"]"))))
    why = QStringLiteral("bad alias '%1': it must be a plain ssh host name").arg(alias);
  else
    why = unavailableReason();
  if (!why.isEmpty()) {
    if (error) *error = why;
    return false;
  }
  removeStaleLeftovers();
  alias_ = alias;
  tmp_ = std::make_unique<QTemporaryDir>(QDir::tempPath() + QStringLiteral("/expnet-host-%1-XXXXXX").arg(::getpid()));
  if (!tmp_->isValid() || !QDir().mkpath(workDir()))
    why = QStringLiteral("cannot make a temporary folder");
  else if (claimNumber(&why) && makeNetwork(&why) && makeHostKey(&why) && makeClientFiles(&why) &&
           writeSshdConfig(&why) && startSshd(&why) && waitUntilSshWorks(kWaitMs, &why))
    return true;
  if (error) *error = QStringLiteral("test host '%1': %2").arg(alias, why);
  stop();
  return false;
}

void TestHost::stop() {
  stopSshd();
  if (!ns_.isEmpty()) removeNamespace(ns_);
  // The pair normally goes with the namespace; this is for a half-made network.
  if (!hostVeth_.isEmpty() && ip({"link", "show", hostVeth_}, 3000).code == 0) ip({"link", "del", hostVeth_}, 5000);
  lock_.reset();  // closing the file releases the flock
  tmp_.reset();
  alias_ = ns_ = hostVeth_ = nsVeth_ = address_ = QString();
  n_ = 0;
}

bool TestHost::isRunning() const {
  // waitForFinished(0) lets QProcess notice an exit without an event loop.
  return sshd_ && sshd_->state() != QProcess::NotRunning && !sshd_->waitForFinished(0);
}

QString TestHost::alias() const { return alias_; }
QString TestHost::sshConfig() const { return file("ssh_config"); }
QStringList TestHost::sshArgs() const { return {"-F", sshConfig()}; }
QString TestHost::address() const { return address_; }
QString TestHost::rootAddress() const { return n_ > 0 ? QStringLiteral("10.213.%1.1").arg(n_) : QString(); }
QString TestHost::namespaceName() const { return ns_; }
QString TestHost::workDir() const { return file("host"); }
QString TestHost::sshdLog() const { return readText(file("sshd.log")); }
QString TestHost::lastError() const { return lastError_; }
QString TestHost::file(const QString& name) const { return tmp_ ? tmp_->filePath(name) : QString(); }

bool TestHost::fail(const QString& why) {
  lastError_ = why;
  return false;
}

bool TestHost::cutLink() {
  // Not the root-side end: with that one down the kernel drops the 10.213.N.0/24 route and
  // would send the host's traffic to the default gateway. With the inner end down, the root
  // side only loses carrier, keeps its route, and the veth drops the packets.
  const Run r = ip({"-n", ns_, "link", "set", nsVeth_, "down"});
  return r.code == 0 || fail(QStringLiteral("cutting the link failed: ") + describe(r));
}

bool TestHost::mountSmallDisk(const QString& dir, const QString& size) {
  if (!sshd_ || sshd_->processId() <= 0) return fail(QStringLiteral("mounting a disk: sshd is not running"));
  const Run r = run(tool("nsenter"), {"--target", QString::number(sshd_->processId()), "--mount", "--", tool("mount"), "-t",
                                      "tmpfs", "-o", "size=" + size, "expnet-test-disk", dir});
  return r.code == 0 || fail(QStringLiteral("mounting a disk failed: ") + describe(r));
}

bool TestHost::restoreLink() {
  const Run r = ip({"-n", ns_, "link", "set", nsVeth_, "up"});
  if (r.code != 0) return fail(QStringLiteral("restoring the link failed: ") + describe(r));
  QString why;
  return waitUntilSshWorks(kWaitMs, &why) || fail(why);
}

bool TestHost::replaceHostKey() {
  QString why;
  stopSshd();
  if (makeHostKey(&why) && startSshd(&why) && waitUntilHostKeyServed(kWaitMs, &why)) return true;
  return fail(why);
}

QString TestHost::runSsh(const QStringList& remoteArgs, int* exitCode, QString* err, int timeoutMs) {
  const Run r = run(tool("ssh"), QStringList{"-F", sshConfig(), "--", alias_} + remoteArgs, timeoutMs);
  if (exitCode) *exitCode = r.code;
  if (err) *err = r.err;
  return r.out;
}

bool TestHost::claimNumber(QString* error) {
  QDir().mkpath(kLockDir);
  const QString used = ip({"-o", "-4", "addr"}).out + ip({"-4", "route"}).out;
  const qint64 pid = ::getpid();
  for (int n = 1; n <= 250; ++n) {
    if (used.contains(QRegularExpression(QStringLiteral("(^|\\s)10\\.213\\.%1\\.").arg(n)))) continue;
    // flock, not a lock file: the kernel releases it when a crashed test dies.
    auto lock = std::make_unique<QFile>(kLockDir + QStringLiteral("/%1.lock").arg(n));
    if (!lock->open(QIODevice::ReadWrite) || ::flock(lock->handle(), LOCK_EX | LOCK_NB) != 0) continue;
    n_ = n;
    lock_ = std::move(lock);
    ns_ = QStringLiteral("expnet-t%1-%2").arg(pid).arg(n);
    hostVeth_ = QStringLiteral("xe%1h%2").arg(n).arg(pid % 1000);  // at most 9 of the 15 characters
    nsVeth_ = QStringLiteral("xe%1n%2").arg(n).arg(pid % 1000);
    address_ = QStringLiteral("10.213.%1.2").arg(n);
    return true;
  }
  *error = QStringLiteral("no free 10.213.N.0/24 (N in 1..250): all are in use or claimed by other tests");
  return false;
}

bool TestHost::makeNetwork(QString* error) {
  const QString outer = QStringLiteral("10.213.%1.1/24").arg(n_), inner = address_ + QStringLiteral("/24");
  // The peer is made inside the namespace at once, so no step leaves a pair behind in the root one.
  const QList<QStringList> steps = {
      {"netns", "add", ns_},
      {"link", "add", hostVeth_, "type", "veth", "peer", "name", nsVeth_, "netns", ns_},
      {"addr", "add", outer, "dev", hostVeth_},
      {"link", "set", hostVeth_, "up"},
      {"-n", ns_, "link", "set", "lo", "up"},
      {"-n", ns_, "addr", "add", inner, "dev", nsVeth_},
      {"-n", ns_, "link", "set", nsVeth_, "up"},
  };
  for (const QStringList& args : steps) {
    const Run r = ip(args);
    if (r.code != 0) {
      *error = QStringLiteral("ip %1 failed: %2").arg(args.join(QLatin1Char(' ')), describe(r));
      return false;
    }
  }
  return true;
}

bool TestHost::makeHostKey(QString* error) {
  const QString key = file("ssh_host_ed25519_key");
  QFile::remove(key);  // ssh-keygen asks before overwriting
  QFile::remove(key + QStringLiteral(".pub"));
  const Run r = keygen(key, QStringLiteral("expnet-test-host"));
  if (r.code == 0) return true;
  *error = QStringLiteral("ssh-keygen (host key) failed: ") + describe(r);
  return false;
}

bool TestHost::makeClientFiles(QString* error) {
  const QString key = file("client_key");
  const Run r = keygen(key, QStringLiteral("expnet-test-client"));
  if (r.code != 0) {
    *error = QStringLiteral("ssh-keygen (client key) failed: ") + describe(r);
    return false;
  }
  const QString clientPub = readText(key + QStringLiteral(".pub"));
  // A known_hosts entry is the address, the key type and the key (no comment).
  const QString hostKey = readText(file("ssh_host_ed25519_key.pub")).section(QLatin1Char(' '), 0, 1);
  // GlobalKnownHostsFile none keeps the system's known hosts out; checking stays strict.
  const QString config = QStringLiteral(
                             "Host %1\n  HostName %2\n  User %3\n  IdentityFile \"%4\"\n  IdentitiesOnly yes\n"
                             "  UserKnownHostsFile \"%5\"\n  GlobalKnownHostsFile none\n"
                             "  StrictHostKeyChecking yes\n  UpdateHostKeys no\n  BatchMode yes\n  ConnectTimeout 5\n")
                             .arg(alias_, address_, currentUser(), key, file("known_hosts"));
  return writeText(file("authorized_keys"), clientPub, error) &&
         writeText(file("known_hosts"), address_ + QLatin1Char(' ') + hostKey.trimmed() + QLatin1Char('\n'), error) &&
         writeText(sshConfig(), config, error);
}

bool TestHost::writeSshdConfig(QString* error) {
  // No Include of /etc/ssh/sshd_config.d: nothing of the system's set-up applies.
  // EXPNET_HOME: the host's expnet keeps its data (run registry, caches) in the
  // host's folder, never in the tester's own.
  // internal-sftp: scp uses the SFTP protocol since OpenSSH 9.0.
  const QString config = QStringLiteral(
                             "ListenAddress %1:22\nAddressFamily inet\nHostKey \"%2\"\nPidFile \"%3\"\n"
                             "AuthorizedKeysFile \"%4\"\nPermitRootLogin prohibit-password\nPubkeyAuthentication yes\n"
                             "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                             "UseDNS no\nPrintMotd no\nPrintLastLog no\nX11Forwarding no\nLogLevel VERBOSE\n"
                             "SetEnv PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin EXPNET_HOME=%5\n"
                             "Subsystem sftp internal-sftp\n")
                             .arg(address_, file("ssh_host_ed25519_key"), file("sshd.pid"), file("authorized_keys"),
                                  workDir() + QStringLiteral("/expnet-home"));
  return writeText(file("sshd_config"), config, error);
}

bool TestHost::startSshd(QString* error) {
  // sshd's privilege-separation directory; normally the ssh service makes it (RuntimeDirectory).
  const QString privsep = QStringLiteral("/run/sshd");
  const auto mode = QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadGroup | QFile::ExeGroup |
                    QFile::ReadOther | QFile::ExeOther;
  if (!QFileInfo::exists(privsep) && !QDir().mkdir(privsep, mode)) {
    *error = QStringLiteral("cannot make %1 (sshd needs it)").arg(privsep);
    return false;
  }
  sshd_ = std::make_unique<QProcess>();
  sshd_->setStandardInputFile(QProcess::nullDevice());
  // A file, not a pipe: sshd would block on a full pipe when a test never reads it.
  sshd_->setStandardOutputFile(file("sshd.log"), QIODevice::Append);
  sshd_->setStandardErrorFile(file("sshd.log"), QIODevice::Append);
  // `ip netns exec` execs sshd, which keeps this: a killed test leaves no listening sshd.
  sshd_->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
  sshd_->start(tool("ip"), {"netns", "exec", ns_, kSshd, "-D", "-e", "-f", file("sshd_config")});
  if (sshd_->waitForStarted(5000)) return true;
  *error = QStringLiteral("cannot start sshd: ") + sshd_->errorString();
  return false;
}

void TestHost::stopSshd() {
  if (!sshd_) return;
  if (sshd_->state() != QProcess::NotRunning) {
    sshd_->terminate();
    if (!sshd_->waitForFinished(3000)) {
      sshd_->kill();
      sshd_->waitForFinished(2000);
    }
  }
  sshd_.reset();
}

bool TestHost::waitUntilSshWorks(int timeoutMs, QString* error) {
  const QDeadlineTimer deadline(timeoutMs);
  QString last;
  for (;;) {
    if (!isRunning()) {
      *error = QStringLiteral("sshd exited; its log:\n") + sshdLog();
      return false;
    }
    const int left = int(qBound(qint64(500), deadline.remainingTime(), qint64(4000)));
    const Run r = run(tool("ssh"), {"-F", sshConfig(), "-o", "ConnectTimeout=2", "--", alias_, "true"}, left);
    if (r.code == 0) return true;
    last = describe(r);
    if (deadline.hasExpired()) break;
    QThread::msleep(100);
  }
  *error = QStringLiteral("`ssh %1 true` did not succeed within %2 ms (last: %3); sshd's log:\n%4")
               .arg(alias_, QString::number(timeoutMs), last, sshdLog());
  return false;
}

bool TestHost::waitUntilHostKeyServed(int timeoutMs, QString* error) {
  const QString wanted = readText(file("ssh_host_ed25519_key.pub")).section(QLatin1Char(' '), 1, 1);
  const QDeadlineTimer deadline(timeoutMs);
  QString last;
  while (!wanted.isEmpty() && !deadline.hasExpired()) {
    if (!isRunning()) break;
    const Run r = run(tool("ssh-keyscan"), {"-T", "2", "-t", "ed25519", address_}, 4000);
    if (r.out.contains(wanted)) return true;
    last = describe(r);
    QThread::msleep(100);
  }
  *error = QStringLiteral("sshd did not serve the new host key within %1 ms (last: %2); sshd's log:\n%3")
               .arg(QString::number(timeoutMs), last, sshdLog());
  return false;
}

QStringList pwnedFiles(const QString& root) {
  QStringList found;
  for (const QString& dir : {root, QDir::currentPath(), QDir::tempPath()}) {
    QDirIterator it(dir, {"PWNED"}, QDir::Files, dir == root ? QDirIterator::Subdirectories : QDirIterator::NoIteratorFlags);
    while (it.hasNext()) found << it.next();
  }
  return found;
}

QByteArray tinyShapesRecipe(const QString& name, int seed, int epochs) {
  const QJsonObject model{{"swin_img_size", 32}, {"swin_patch_size", 4}, {"swin_in_chans", 3}, {"swin_embed_dim", 16},
                          {"swin_depths", QJsonArray{1, 1}}, {"swin_num_heads", QJsonArray{1, 2}}, {"swin_window_size", 4},
                          {"swin_mlp_ratio", 2.0}, {"swin_qkv_bias", true}, {"swin_ape", false}, {"swin_patch_norm", true},
                          {"final_swin_dim", 32}, {"d_model", 32}, {"N_enc", 1}, {"N_dec", 1}, {"ff", 64}, {"num_heads", 2},
                          {"num_exp_enc_list", QJsonArray{4, 8}}, {"num_exp_dec", 4}, {"max_seq_len", 22}};
  const QJsonObject stage{{"name", "A"}, {"objective", "xe"}, {"backbone", "frozen"}, {"batch", 8}, {"lr", 1e-3},
                          {"schedule", "fixed"}, {"epochs", epochs}, {"dropout", 0.1}, {"max_batches_per_epoch", 5}};
  const QJsonObject recipe{{"name", name}, {"seed", seed}, {"model", model}, {"dataset", "shapes"}, {"shapes_images", 60},
                           {"vocab_min_count", 1}, {"validation_images", 3}, {"validation_beam", 1}, {"workers", 1},
                           {"checkpoint_every", 1}, {"stages", QJsonArray{stage}}};
  return QJsonDocument(recipe).toJson();
}

QString captionHereAndThere(TestHost& host, const QString& home, const QString& there, QString* here, QString* remote) {
  const QString image = QStringLiteral(EXPNET_TEST_DATA_DIR "/image/cmyk_32x8.jpg");
  const auto mine = runProcess(cliPath(), {"caption", "--checkpoint", home, image}, 60000);
  if (mine.exitCode != 0) return QString::fromUtf8(mine.err);
  const QString link = host.workDir() + "/caption-" + QFileInfo(home).completeBaseName() + ".pth";
  QFile::remove(link);
  if (!QFile::link(there, link)) return "cannot link " + link;
  int status = -1;
  QString err;
  const QString theirs = host.runSsh({cliPath(), "caption", "--checkpoint", link, image}, &status, &err);
  if (status != 0) return err;
  // "path<TAB>caption"
  *here = QString::fromUtf8(mine.out).section('\t', 1).trimmed();
  *remote = theirs.section('\t', 1).trimmed();
  return here->isEmpty() ? QStringLiteral("no caption here: ") + QString::fromUtf8(mine.out) : QString();
}

}  // namespace expnet_test
