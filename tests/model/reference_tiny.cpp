#include "reference_tiny.h"

#include <torch/torch.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <set>

#include "expnet/model/state_entries.h"

#include "support/fixtures.h"

namespace expnet_test {
namespace {

torch::ScalarType dtype_from_name(const QString& name) {
  if (name == QLatin1String("float32")) return torch::kFloat;
  if (name == QLatin1String("float64")) return torch::kDouble;
  if (name == QLatin1String("int64")) return torch::kLong;
  if (name == QLatin1String("int32")) return torch::kInt;
  if (name == QLatin1String("uint8")) return torch::kByte;
  if (name == QLatin1String("bool")) return torch::kBool;
  throw std::runtime_error("unsupported dtype " + name.toStdString());
}

std::vector<int64_t> shape_of(const QJsonArray& array) {
  std::vector<int64_t> shape;
  for (const auto& v : array) shape.push_back(v.toInteger());
  return shape;
}

// A tensor copied out of `blob` (raw little-endian data).
torch::Tensor tensor_from(const QByteArray& blob, qint64 offset, const std::vector<int64_t>& shape,
                          torch::ScalarType dtype) {
  auto t = torch::empty(shape, torch::TensorOptions().dtype(dtype));
  const qint64 nbytes = static_cast<qint64>(t.numel() * t.element_size());
  if (offset < 0 || offset + nbytes > blob.size()) throw std::runtime_error("tensor lies outside its data file");
  std::memcpy(t.data_ptr(), blob.constData() + offset, static_cast<size_t>(nbytes));
  return t;
}

QJsonObject read_json(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error("cannot read " + path.toStdString());
  return QJsonDocument::fromJson(f.readAll()).object();
}

QByteArray read_all(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) throw std::runtime_error("cannot read " + path.toStdString());
  return f.readAll();
}

}  // namespace

QString loadTinyReference(const QString& dir, expnet::ExpansionNet& model, TinyReference& reference) {
  try {
    reference.config = expnet::ModelConfig::load((dir + QStringLiteral("/model_config.json")).toStdString());

    // 1. PyTorch converts the checkpoint's model_state_dict to raw tensors.
    const QString out = makeTempDir(QStringLiteral("tiny_reference_weights"));
    const auto r = runProcess(torchPython(), {QStringLiteral(EXPNET_MODEL_TEST_DIR "/export_state_dict.py"),
                                              dir + QStringLiteral("/checkpoint.pth"),
                                              dir + QStringLiteral("/vocab.pickle"), out});
    if (r.exitCode != 0)
      return QStringLiteral("export_state_dict.py failed (%1): %2").arg(r.exitCode).arg(QString::fromUtf8(r.err));
    const QJsonObject index = read_json(out + QStringLiteral("/index.json"));
    reference.pad_id = index.value(QStringLiteral("pad_id")).toInteger();
    reference.sos_id = index.value(QStringLiteral("sos_id")).toInteger();
    reference.eos_id = index.value(QStringLiteral("eos_id")).toInteger();
    reference.vocab_size = index.value(QStringLiteral("vocab_size")).toInteger();

    // 2. Load them into our model by name; every name must match both ways.
    model = expnet::ExpansionNet(reference.config, reference.vocab_size, /*reference_init=*/false);
    model->eval();
    std::map<std::string, torch::Tensor> ours;
    for (auto& e : expnet::state_entries(*model)) ours[e.name] = e.tensor;
    const QByteArray blob = read_all(out + QStringLiteral("/weights.bin"));
    std::set<std::string> loaded;
    torch::NoGradGuard no_grad;
    for (const auto& v : index.value(QStringLiteral("entries")).toArray()) {
      const QJsonObject e = v.toObject();
      const std::string name = e.value(QStringLiteral("name")).toString().toStdString();
      const auto it = ours.find(name);
      if (it == ours.end()) return QStringLiteral("checkpoint entry %1 has no counterpart in our model").arg(name.c_str());
      const auto t = tensor_from(blob, e.value(QStringLiteral("offset")).toInteger(),
                                 shape_of(e.value(QStringLiteral("shape")).toArray()),
                                 dtype_from_name(e.value(QStringLiteral("dtype")).toString()));
      if (t.sizes() != it->second.sizes() || t.scalar_type() != it->second.scalar_type())
        return QStringLiteral("%1: checkpoint shape/dtype differs from ours").arg(name.c_str());
      it->second.copy_(t);
      loaded.insert(name);
    }
    for (const auto& [name, tensor] : ours)
      if (!loaded.count(name)) return QStringLiteral("our entry %1 is missing from the checkpoint").arg(name.c_str());

    // 3. Expected tensors.
    const QJsonObject expected = read_json(dir + QStringLiteral("/expected.json")).value(QStringLiteral("tensors")).toObject();
    const QByteArray bin = read_all(dir + QStringLiteral("/expected.bin"));
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      const QJsonObject e = it.value().toObject();
      reference.expected[it.key().toStdString()] =
          tensor_from(bin, e.value(QStringLiteral("offset")).toInteger(), shape_of(e.value(QStringLiteral("shape")).toArray()),
                      dtype_from_name(e.value(QStringLiteral("dtype")).toString()));
    }
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

TensorDiff compareTensors(const torch::Tensor& ours, const torch::Tensor& expected) {
  TensorDiff diff;
  if (ours.sizes() != expected.sizes()) {
    std::ostringstream s;
    s << "shape " << ours.sizes() << " vs expected " << expected.sizes();
    diff.shape_error = QString::fromStdString(s.str());
    return diff;
  }
  const auto a = ours.detach().to(torch::kDouble).contiguous(), b = expected.to(torch::kDouble).contiguous();
  const auto abs = (a - b).abs().view(-1);
  const int64_t flat = abs.argmax().item<int64_t>();
  diff.max_abs = abs[flat].item<double>();
  QStringList coords;
  int64_t rest = flat;
  std::vector<int64_t> index(static_cast<size_t>(a.dim()));
  for (int64_t d = a.dim() - 1; d >= 0; --d) {
    index[static_cast<size_t>(d)] = rest % a.size(d);
    rest /= a.size(d);
  }
  for (const auto i : index) coords << QString::number(i);
  diff.where = QStringLiteral("[%1]: ours %2 expected %3")
                   .arg(coords.join(QStringLiteral(", ")))
                   .arg(a.view(-1)[flat].item<double>(), 0, 'g', 9)
                   .arg(b.view(-1)[flat].item<double>(), 0, 'g', 9);
  return diff;
}

}  // namespace expnet_test
