// The training config's field tables: every preset survives the JSON round
// trip unchanged, the form's field list and the serialiser agree key for key,
// and bad values are refused with the key, the accepted values and the source.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "expnet/train/train_config.h"

using namespace expnet;

namespace {

// The error from_json gives for `text`, or "" when it accepts it.
std::string config_error(const std::string& text) {
  try {
    TrainConfig::from_json(text, "cfg");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// A valid config whose first stage has `key` set to `value` (JSON text).
std::string with_stage_value(const std::string& key, const std::string& value) {
  return R"({"model": "tiny", "stages": [{")" + key + R"(": )" + value + "}]}";
}

}  // namespace

class TestTrainConfig : public QObject {
  Q_OBJECT

 private slots:
  void presetsRoundTrip() {
    for (const auto& name : train_preset_names()) {
      const TrainConfig preset = train_preset(name);
      const std::string text = preset.to_json();
      QCOMPARE(TrainConfig::from_json(text, name).to_json(), text);
    }
    const TrainConfig demo = train_preset("shapes-demo");
    QCOMPARE(demo.stages.size(), size_t(2));
    QVERIFY(demo.stages[0].objective == Objective::xe && demo.stages[0].batch_unit == BatchUnit::image);
    QVERIFY(demo.stages[1].objective == Objective::scst && demo.stages[1].frozen_backbone);
    QVERIFY(demo.stages[0].schedule == LrScheduleKind::linear_warmup);
  }

  void formFieldsAreTheSerialisedKeys() {
    std::set<std::string> listed, written;
    for (const auto& field : stage_config_fields()) listed.insert(field.key);
    const auto stage_json = nlohmann::json::parse(StageConfig{}.to_json());  // kept alive for items()
    for (const auto& item : stage_json.items()) written.insert(item.key());
    QVERIFY(listed == written);
    listed.clear();
    written.clear();
    for (const auto& field : train_config_fields()) listed.insert(field.key);
    const auto config_json = nlohmann::json::parse(train_preset("paper").to_json());
    for (const auto& item : config_json.items()) written.insert(item.key());
    QVERIFY(listed == written);
    for (const auto& field : stage_config_fields()) {
      if (field.key == "batch") QCOMPARE(field.default_json, std::string("48"));
      if (field.key == "schedule") {
        QVERIFY(field.type == ConfigFieldType::choice);
        QCOMPARE(field.choices, (std::vector<std::string>{"reference", "linear", "fixed"}));
        QCOMPARE(field.default_json, std::string("\"reference\""));
      }
    }
  }

  void badValuesAreNamed() {
    QCOMPARE(config_error(with_stage_value("objective", R"("sgd")")),
             std::string("cfg stage 0: 'objective' must be xe, scst or pnaic, not \"sgd\""));
    QCOMPARE(config_error(with_stage_value("schedule", R"("cosine")")),
             std::string("cfg stage 0: 'schedule' must be reference, linear or fixed, not \"cosine\""));
    QCOMPARE(config_error(with_stage_value("batch", R"("many")")), std::string("cfg stage 0: 'batch' must be a whole number, not \"many\""));
    QCOMPARE(config_error(with_stage_value("batches", "3")),
             std::string("cfg stage 0: unknown key 'batches' (see docs/training.md)"));
    QVERIFY(config_error(with_stage_value("batch", "0")).find("must be >= 1") != std::string::npos);
    QCOMPARE(config_error(R"({"stages": [{}]})"), std::string("cfg: key 'model' (a preset name or an object) is missing"));
    QCOMPARE(config_error(R"({"model": "tiny", "feature_cache": "ram", "stages": [{}]})"),
             std::string("cfg: 'feature_cache' must be disk or off, not \"ram\""));
    QCOMPARE(config_error(R"({"model": "tiny", "shapes_style": "fancy", "stages": [{}]})"),
             std::string("cfg: 'shapes_style' must be varied or classic, not \"fancy\""));
    QCOMPARE(config_error(with_stage_value("backbone", R"("train")")), std::string());
  }
};

QTEST_GUILESS_MAIN(TestTrainConfig)
#include "test_train_config.moc"
