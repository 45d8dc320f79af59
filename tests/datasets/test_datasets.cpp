// Dataset readers (every format), CSV parsing, vocabulary, statistics, the
// SQLite index and the dataset CLI, on small datasets written by the tests.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <atomic>
#include <filesystem>
#include <set>
#include <fstream>

#include "expnet/text/caption_text.h"
#include "expnet/data/data_loader.h"
#include "expnet/data/dataset.h"
#include "expnet/data/dataset_index.h"
#include "support/fixtures.h"

using namespace expnet;

namespace {

std::string write(const QString& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.toStdString() + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

using expnet_test::errorOf;

const char* kKarpathy = R"({"images":[
 {"cocoid":11,"filepath":"train2014","filename":"a.jpg","split":"train","sentences":[{"raw":"A dog, on grass.","tokens":["ignored"]},{"raw":"a dog runs"}]},
 {"cocoid":12,"filepath":"val2014","filename":"b.jpg","split":"restval","sentences":[{"raw":"Two dogs"}]},
 {"cocoid":13,"filepath":"val2014","filename":"c.jpg","split":"val","sentences":[{"raw":"a cat"}]},
 {"cocoid":14,"filepath":"val2014","filename":"d.jpg","split":"test","width":640,"height":480,"sentences":[{"tokens":["a","bird"]}]}
]})";

// 23 train images with 5 captions of 1..18 words each; files are "/imgs/iN".
Dataset loader_dataset() {
  Dataset d;
  d.source = "loader.json";
  d.image_root = "/imgs";
  for (int i = 0; i < 23; ++i) {
    DatasetImage image;
    image.cocoid = i;
    image.filename = "i" + std::to_string(i);
    for (int c = 0; c < 5; ++c) {
      std::string raw = "word" + std::to_string(c);
      for (int w = 0; w < (i * 7 + c * 3) % 18; ++w) raw += " w" + std::to_string(w);
      image.captions.push_back({raw, clean_caption(raw)});
    }
    d.images.push_back(image);
  }
  return d;
}

}  // namespace

class TestDatasets : public QObject {
  Q_OBJECT
 private slots:
  void csvParserFollowsRfc4180() {
    const auto rows = parse_csv("\xEF\xBB\xBFimage,caption\r\na.jpg,\"a dog, running\"\r\n\"b.jpg\",\"say \"\"hi\"\"\nnext line\"\nc.jpg,\n");
    QCOMPARE(rows.size(), size_t(4));
    QCOMPARE(rows[0].fields, (std::vector<std::string>{"image", "caption"}));
    QCOMPARE(rows[1].fields, (std::vector<std::string>{"a.jpg", "a dog, running"}));
    QCOMPARE(rows[2].fields, (std::vector<std::string>{"b.jpg", "say \"hi\"\nnext line"}));
    QCOMPARE(rows[2].line, size_t(3));
    QCOMPARE(rows[3].line, size_t(5));
    QCOMPARE(rows[3].fields, (std::vector<std::string>{"c.jpg", ""}));
    const QString error = errorOf([] { parse_csv("image,caption\na.jpg,\"never closed\n", "x.csv"); });
    QVERIFY2(error.contains("x.csv:2") && error.contains("never closed"), qPrintable(error));
  }

  void karpathyReader() {
    const QString dir = expnet_test::makeTempDir("karpathy");
    write(dir, "dataset_coco.json", kKarpathy);
    const Dataset d = load_dataset(dir.toStdString());  // a folder holding dataset_coco.json
    QCOMPARE(d.format, DatasetFormat::Karpathy);
    QCOMPARE(d.images.size(), size_t(4));
    QCOMPARE(d.caption_count(), size_t(5));
    QCOMPARE(d.images[0].cocoid, int64_t(11));
    QCOMPARE(d.images[1].split, Split::Restval);
    QCOMPARE(d.images[3].split, Split::Test);
    QCOMPARE(d.images[3].width, 640);
    // Tokens come from clean_caption(raw), not from the file's own tokens.
    QCOMPARE(d.images[0].captions[0].tokens, (std::vector<std::string>{"a", "dog", "on", "grass"}));
    QCOMPARE(d.images[3].captions[0].raw, std::string("a bird"));
    QCOMPARE(QString::fromStdString(d.image_path(d.images[0])), dir + "/train2014/a.jpg");
    DatasetLoadOptions options;
    options.image_root = "/data/coco";
    QCOMPARE(load_dataset(dir.toStdString(), options).image_path(d.images[2]), std::string("/data/coco/val2014/c.jpg"));
  }

  void karpathyErrorsNameTheFileAndPlace() {
    const QString dir = expnet_test::makeTempDir("karpathy_bad");
    const std::string broken = write(dir, "broken.json", "{\"images\": [\n {\"filename\": \"a.jpg\",\n  \"split\": train}\n]}");
    QString error = errorOf([&] { load_dataset(broken); });
    QVERIFY2(error.contains("broken.json:3:") && error.contains("not valid JSON"), qPrintable(error));
    const std::string nofile = write(dir, "nofile.json", R"({"images":[{"filename":"a.jpg","split":"train"},{"split":"val"}]})");
    error = errorOf([&] { load_dataset(nofile); });
    QVERIFY2(error.contains("images[1]") && error.contains("filename"), qPrintable(error));
    const std::string badsplit = write(dir, "badsplit.json", R"({"images":[{"filename":"a.jpg","split":"holdout"}]})");
    error = errorOf([&] { load_dataset(badsplit); });
    QVERIFY2(error.contains("holdout") && error.contains("restval"), qPrintable(error));
    error = errorOf([&] { load_dataset(dir.toStdString() + "/missing.json"); });
    QVERIFY2(error.contains("does not exist"), qPrintable(error));
    error = errorOf([&] { load_dataset(write(dir, "other.json", "[1,2]")); });
    QVERIFY2(error.contains("\"images\""), qPrintable(error));
    // Captions given as a string instead of a list: said, not read as an image without captions.
    error = errorOf([&] {
      load_dataset(write(dir, "string.json", R"({"images":[{"filename":"a.jpg","split":"val","sentences":"a dog"}]})"));
    });
    QVERIFY2(error.contains("string.json") && error.contains("sentences is not a list"), qPrintable(error));
    // A number beyond double's range: the file, the place and the text, not a bare library message.
    error = errorOf([&] {
      load_dataset(write(dir, "huge.json", "{\"images\":[\n{\"filename\":\"a.jpg\",\"split\":\"val\",\"cocoid\":1e400}]}"));
    });
    QVERIFY2(error.contains("huge.json:2:") && error.contains("1e400") && error.contains("too large"), qPrintable(error));
  }

  void cocoCaptionsReader() {
    const QString dir = expnet_test::makeTempDir("coco");
    QDir(dir).mkpath(QStringLiteral("val2014"));
    const std::string file = write(dir, "annotations/captions_val2014.json", R"({
      "images":[{"id":42,"file_name":"COCO_val2014_000000000042.jpg","width":640,"height":427},
                {"id":7,"file_name":"COCO_val2014_000000000007.jpg","width":500,"height":375}],
      "annotations":[{"id":1,"image_id":42,"caption":"A man riding a HORSE."},
                     {"id":2,"image_id":7,"caption":"a plate of food"},
                     {"id":3,"image_id":42,"caption":"someone on a horse"}]})");
    const Dataset d = load_dataset(file);
    QCOMPARE(d.format, DatasetFormat::Coco);
    QCOMPARE(d.images.size(), size_t(2));
    QCOMPARE(d.images[0].cocoid, int64_t(42));
    QCOMPARE(d.images[0].split, Split::Val);
    QCOMPARE(d.images[0].height, 427);
    QCOMPARE(d.images[0].captions.size(), size_t(2));
    QCOMPARE(clean_caption_text(d.images[0].captions[0].raw), std::string("a man riding a horse"));
    // annotations/ beside val2014/: images resolve there.
    QCOMPARE(QString::fromStdString(d.image_path(d.images[1])), dir + "/val2014/COCO_val2014_000000000007.jpg");
    const std::string bad = write(dir, "captions_train2014.json", R"({"images":[{"id":1,"file_name":"x.jpg"}],
      "annotations":[{"image_id":99,"caption":"x"}]})");
    const QString error = errorOf([&] { load_dataset(bad); });
    QVERIFY2(error.contains("annotations[0]") && error.contains("99"), qPrintable(error));
  }

  void csvReader() {
    const QString dir = expnet_test::makeTempDir("csv");
    const std::string file = write(dir, "captions.csv",
                                   "image,caption,split\n"
                                   "photos/a.jpg,\"A dog, and a cat\",train\n"
                                   "photos/a.jpg,two animals,train\n"
                                   "b.png,\"a \"\"quoted\"\" word\",val\n"
                                   "\n"
                                   "c.png,a tree,\n");
    const Dataset d = load_dataset(dir.toStdString());  // the only dataset file in the folder
    QCOMPARE(d.format, DatasetFormat::Csv);
    QCOMPARE(d.images.size(), size_t(3));
    QCOMPARE(d.images[0].captions.size(), size_t(2));
    QCOMPARE(d.images[0].filepath, std::string("photos"));
    QCOMPARE(d.images[0].captions[0].tokens, (std::vector<std::string>{"a", "dog", "and", "a", "cat"}));
    QCOMPARE(d.images[1].split, Split::Val);
    QCOMPARE(d.images[1].captions[0].raw, std::string("a \"quoted\" word"));
    QCOMPARE(d.images[2].split, Split::Train);  // empty split cell: train
    QCOMPARE(d.images[2].cocoid, int64_t(3));
    QCOMPARE(QString::fromStdString(d.image_path(d.images[0])), dir + "/photos/a.jpg");

    QString error = errorOf([&] { load_dataset(write(dir, "fields.csv", "image,caption\na.jpg,a dog, running\n")); });
    QVERIFY2(error.contains("fields.csv:2") && error.contains("3 fields"), qPrintable(error));
    error = errorOf([&] { load_dataset(write(dir, "header.csv", "a.jpg,a dog\n")); });
    QVERIFY2(error.contains("header.csv:1") && error.contains("'image'"), qPrintable(error));
    error = errorOf([&] { load_dataset(write(dir, "empty.csv", "image,caption\na.jpg,\n")); });
    QVERIFY2(error.contains("empty.csv:2") && error.contains("empty"), qPrintable(error));
    error = errorOf([&] { load_dataset(write(dir, "conflict.csv", "image,caption,split\na.jpg,x,train\na.jpg,y,test\n")); });
    QVERIFY2(error.contains("conflict.csv:3") && error.contains("one split"), qPrintable(error));
  }

  void jsonlReader() {
    const QString dir = expnet_test::makeTempDir("jsonl");
    const std::string file = write(dir, "data.jsonl",
                                   "{\"image\":\"a.jpg\",\"caption\":\"A red car.\",\"split\":\"test\"}\n"
                                   "\n"
                                   "{\"image\":\"b.jpg\",\"captions\":[\"one\",\"two\"],\"id\":77}\n");
    const Dataset d = load_dataset(file);
    QCOMPARE(d.format, DatasetFormat::Jsonl);
    QCOMPARE(d.images.size(), size_t(2));
    QCOMPARE(d.images[0].split, Split::Test);
    QCOMPARE(d.images[0].captions[0].tokens, (std::vector<std::string>{"a", "red", "car"}));
    QCOMPARE(d.images[1].cocoid, int64_t(77));
    QCOMPARE(d.images[1].captions.size(), size_t(2));
    const QString error = errorOf([&] { load_dataset(write(dir, "bad.jsonl", "{\"image\":\"a.jpg\",\"caption\":\"x\"}\n{\"image\":\"b.jpg\"\n")); });
    QVERIFY2(error.contains("bad.jsonl:2"), qPrintable(error));
    // --format overrides the extension.
    DatasetLoadOptions options;
    options.format = DatasetFormat::Jsonl;
    QCOMPARE(load_dataset(write(dir, "rows.txt", "{\"image\":\"a.jpg\",\"caption\":\"x\"}\n"), options).images.size(), size_t(1));
  }

  void vocabularyCountsTrainingSplitsOnly() {
    Dataset d;
    auto add = [&](Split split, std::vector<std::string> raws) {
      DatasetImage image;
      image.split = split;
      image.cocoid = static_cast<int64_t>(d.images.size());
      for (auto& raw : raws) image.captions.push_back({raw, clean_caption(raw)});
      d.images.push_back(image);
    };
    add(Split::Train, {"a dog a dog a", "a cat"});
    add(Split::Restval, {"a dog", "zebra"});
    add(Split::Val, {"zebra zebra zebra zebra zebra zebra"});  // val words never count
    const VocabularyBuild build = build_vocabulary(d, 2);
    QCOMPARE(build.counts.at("a"), int64_t(5));
    QCOMPARE(build.counts.at("dog"), int64_t(3));
    QCOMPARE(build.counts.at("zebra"), int64_t(1));
    QCOMPARE(build.counts.count("UNK"), size_t(0));
    QCOMPARE(build.vocabulary.words(), (std::vector<std::string>{"EOS", "PAD", "SOS", "UNK", "a", "dog"}));
    QCOMPARE(build.dropped_words, int64_t(2));  // cat, zebra
    QCOMPARE(build.unk_tokens, int64_t(2));
    QCOMPARE(build.total_tokens, int64_t(10));
    QCOMPARE(build.vocabulary.encode({"a", "zebra"}), (std::vector<int64_t>{4, 3}));
    QCOMPARE(build_vocabulary(d, 1).vocabulary.size(), int64_t(8));
    QCOMPARE(build_vocabulary(d, 6).vocabulary.size(), int64_t(4));

    const DatasetStats stats = compute_stats(d, 2, 3);
    QCOMPARE(stats.captions, size_t(5));
    QCOMPARE(stats.caption_length_histogram.at(2), size_t(2));  // "a cat", "a dog"
    QCOMPARE(stats.max_caption_length, size_t(6));
    QCOMPARE(stats.top_words.front(), (std::pair<std::string, int64_t>{"a", 5}));
    QCOMPARE(stats.training_coverage, 0.8);
    QCOMPARE(stats.eval_coverage, 0.0);  // every val token is zebra, an UNK
  }

  void indexAndQuery() {
    const QString dir = expnet_test::makeTempDir("index");
    Dataset d;
    d.source = dir.toStdString() + "/dataset_coco.json";
    d.image_root = dir.toStdString();
    for (int i = 0; i < 45; ++i) {
      DatasetImage image;
      image.cocoid = 1000 + i;
      image.filepath = "images";
      image.filename = "im" + std::to_string(i) + ".png";
      image.split = i < 25 ? Split::Train : i < 40 ? Split::Val : Split::Test;
      for (const std::string& raw : {std::string(i % 3 == 0 ? "A Dog on a bed." : "a cat on a bed"), "photo number " + std::to_string(i)})
        image.captions.push_back({raw, clean_caption(raw)});
      d.images.push_back(image);
    }
    const std::string db = dir.toStdString() + "/index.sqlite";
    const IndexBuildReport report = build_dataset_index(d, db);
    QCOMPARE(report.images, int64_t(45));
    QCOMPARE(report.captions, int64_t(90));
    DatasetIndex index(db);
    QCOMPARE(index.meta("format"), std::string("karpathy"));
    QCOMPARE(index.split_counts(), (std::vector<std::pair<std::string, int64_t>>{{"train", 25}, {"val", 15}, {"test", 5}}));

    IndexQuery q;
    q.split = "val";
    q.text = "dog";
    q.page_size = 2;
    IndexPage page = index.query(q);  // val dogs: i = 27, 30, 33, 36, 39
    QCOMPARE(page.total, int64_t(5));
    QCOMPARE(page.images.size(), size_t(2));
    QCOMPARE(page.images[0].cocoid, int64_t(1027));
    QCOMPARE(page.images[0].captions, (std::vector<std::string>{"A Dog on a bed.", "photo number 27"}));
    QCOMPARE(page.images[0].split, std::string("val"));
    q.page = 3;
    page = index.query(q);
    QCOMPARE(page.images.size(), size_t(1));
    QCOMPARE(page.images[0].cocoid, int64_t(1039));
    q.page = 4;
    QVERIFY(index.query(q).images.empty());
    q = IndexQuery{};
    q.text = "Photo NUMBER, 7";  // cleaned like captions; all words required
    page = index.query(q);
    QCOMPARE(page.total, int64_t(1));
    QCOMPARE(page.images[0].cocoid, int64_t(1007));
    q.text = "";
    q.split = "test";
    QCOMPARE(index.query(q).total, int64_t(5));
    q.split = "holdout";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, index.query(q));
    QCOMPARE(QString::fromStdString(index.image_path(1003)), dir + "/images/im3.png");

    // Thumbnails: made once from the image source, then served from the table.
    int decodes = 0;
    std::string decoded;
    const ImageSource source = [&](const std::string& path) -> cv::Mat {
      ++decodes;
      decoded = path;
      return cv::Mat(60, 90, CV_8UC3, cv::Scalar(10, 200, 30));
    };
    const auto png = index.thumbnail(1003, 32, source);
    QCOMPARE(index.thumbnail(1003, 32, source), png);
    QCOMPARE(decodes, 1);
    QCOMPARE(QString::fromStdString(decoded), dir + "/images/im3.png");
    const cv::Mat thumb = cv::imdecode(png, cv::IMREAD_COLOR);
    QCOMPARE(thumb.cols, 32);
    QCOMPARE(thumb.rows, 21);
    QCOMPARE(static_cast<int>(thumb.at<cv::Vec3b>(10, 10)[1]), 200);
  }

  void failedIndexKeepsTheOldOne() {
    const QString dir = expnet_test::makeTempDir("index_fail");
    const std::string db = dir.toStdString() + "/index.sqlite";
    Dataset good;
    good.source = "good.json";
    good.images.push_back({1, "", "a.jpg", Split::Train, 0, 0, {{"a dog", {"a", "dog"}}}});
    build_dataset_index(good, db);
    Dataset bad = good;
    bad.images.push_back(bad.images.front());  // same cocoid twice
    const QString error = errorOf([&] { build_dataset_index(bad, db); });
    QVERIFY2(error.contains("appears twice"), qPrintable(error));
    QCOMPARE(DatasetIndex(db).query({}).total, int64_t(1));
    QCOMPARE(QDir(dir).entryList(QDir::Files), QStringList{QStringLiteral("index.sqlite")});  // no temp left
    const std::string junk = write(dir, "junk.sqlite", "not a database at all, just text");
    QVERIFY(!errorOf([&] { DatasetIndex index(junk); }).isEmpty());
    QVERIFY(errorOf([&] { DatasetIndex index(dir.toStdString() + "/none.sqlite"); }).contains("expnet dataset index"));
  }

  void loaderCaptionWiseCoversEpochsAndRestoresExactly() {
    const Dataset d = loader_dataset();
    const Vocabulary vocab = build_vocabulary(d, 1).vocabulary;
    LoaderOptions options;
    options.batch_size = 8;
    options.seed = 3;
    options.workers = 2;
    std::atomic<int> decodes{0};
    const ImageSource source = [&](const std::string& path) {
      ++decodes;
      const int id = std::stoi(path.substr(path.rfind('/') + 2));
      return cv::Mat(4, 4, CV_8UC1, cv::Scalar(id));
    };
    DataLoader a(d, vocab, options, source);
    QCOMPARE(a.items_per_epoch(), int64_t(23 * 5));
    QCOMPARE(a.batches_per_epoch(), int64_t(15));
    std::vector<Batch> sequence;
    for (int i = 0; i < 40; ++i) sequence.push_back(a.next());
    QCOMPARE(a.state().epoch, int64_t(2));
    QCOMPARE(a.state().position, int64_t(10));
    // Epoch 0 visits every (image, caption) exactly once.
    std::multiset<std::vector<int64_t>> seen, expected;
    for (int i = 0; i < 15; ++i) {
      const Batch& b = sequence[static_cast<size_t>(i)];
      QCOMPARE(b.epoch, int64_t(0));
      QCOMPARE(b.position, int64_t(i));
      for (size_t row = 0; row < b.size(); ++row) {
        QCOMPARE(static_cast<int>(b.images[row].at<uchar>(0, 0)), static_cast<int>(b.cocoids[row]));
        std::vector<int64_t> key = {b.cocoids[row]};
        const int64_t* t = b.tokens.data() + row * static_cast<size_t>(b.length);
        QCOMPARE(t[0], vocab.sos_id());
        QCOMPARE(t[b.caption_lengths[row] - 1], vocab.eos_id());
        for (int64_t k = b.caption_lengths[row]; k < b.length; ++k) QCOMPARE(t[k], vocab.pad_id());
        key.insert(key.end(), t, t + b.caption_lengths[row]);
        seen.insert(key);
      }
    }
    for (const auto& image : d.images)
      for (const auto& caption : image.captions) {
        std::vector<int64_t> key = {image.cocoid, vocab.sos_id()};
        for (const int64_t id : vocab.encode(caption.tokens)) key.push_back(id);
        key.push_back(vocab.eos_id());
        expected.insert(key);
      }
    QVERIFY(seen == expected);
    QVERIFY(sequence[15].cocoids != sequence[0].cocoids || sequence[16].cocoids != sequence[1].cocoids);  // reshuffled

    // Exact restore from a saved state, in a new loader.
    DataLoader b(d, vocab, options, source);
    for (int i = 0; i < 17; ++i) b.next();
    const std::string saved = b.state().to_json();
    DataLoader c(d, vocab, options, source);
    c.restore(LoaderState::from_json(saved));
    for (int i = 17; i < 40; ++i) {
      const Batch batch = c.next();
      QCOMPARE(batch.epoch, sequence[static_cast<size_t>(i)].epoch);
      QCOMPARE(batch.position, sequence[static_cast<size_t>(i)].position);
      QCOMPARE(batch.cocoids, sequence[static_cast<size_t>(i)].cocoids);
      QCOMPARE(batch.tokens, sequence[static_cast<size_t>(i)].tokens);
    }
    // Back in time on the same loader, and one worker only: same batches.
    options.workers = 1;
    DataLoader one(d, vocab, options, source);
    one.restore({3, 0, 5});
    QCOMPARE(one.next().tokens, sequence[5].tokens);
    one.restore({3, 2, 3});
    QCOMPARE(one.next().cocoids, sequence[33].cocoids);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, one.restore({3, 0, 15}));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, LoaderState::from_json("{\"format\":\"other\"}"));

    // Another seed, another order.
    options.seed = 4;
    DataLoader other(d, vocab, options, source);
    QVERIFY(other.next().cocoids != sequence[0].cocoids);
  }

  void loaderGroupsLengthsAndSamplesImages() {
    const Dataset d = loader_dataset();
    const Vocabulary vocab = build_vocabulary(d, 1).vocabulary;
    bool images_seen = false;
    auto padding = [&](bool group) -> int64_t {
      LoaderOptions options;
      options.batch_size = 8;
      options.group_by_length = group;
      DataLoader loader(d, vocab, options, {});
      int64_t pads = 0;
      for (int64_t i = 0; i < loader.batches_per_epoch(); ++i) {
        const Batch b = loader.next();
        images_seen = images_seen || !b.images.empty();
        for (const int64_t len : b.caption_lengths) pads += b.length - len;
      }
      return pads;
    };
    const int64_t grouped = padding(true), ungrouped = padding(false);
    QVERIFY2(grouped * 2 < ungrouped, qPrintable(QStringLiteral("%1 vs %2").arg(grouped).arg(ungrouped)));
    QVERIFY(!images_seen);  // no image source: no images

    LoaderOptions options;
    options.mode = SamplingMode::ImageWise;
    options.batch_size = 5;
    DataLoader loader(d, vocab, options, {});
    QCOMPARE(loader.batches_per_epoch(), int64_t(5));
    std::set<int64_t> images;
    for (int i = 0; i < 5; ++i) {
      const Batch b = loader.next();
      // Every caption of every image, as token rows mapped to their item.
      QCOMPARE(b.caption_items.size(), b.size() * 5);
      QCOMPARE(static_cast<int64_t>(b.tokens.size()), b.length * static_cast<int64_t>(b.caption_items.size()));
      for (size_t row = 0; row < b.caption_items.size(); ++row) QCOMPARE(b.caption_items[row], static_cast<int64_t>(row / 5));
      QCOMPARE(b.references.size(), b.size());
      for (size_t k = 0; k < b.size(); ++k) {
        QCOMPARE(b.references[k].size(), size_t(5));
        QVERIFY(b.references[k][0].rfind("word", 0) == 0);
        images.insert(b.cocoids[k]);
      }
    }
    QCOMPARE(images.size(), size_t(23));

    // An image error reaches the trainer with the file's name.
    options.mode = SamplingMode::CaptionWise;
    DataLoader failing(d, vocab, options, [](const std::string& path) -> cv::Mat {
      throw std::runtime_error("cannot decode '" + path + "'");
    });
    const QString error = errorOf([&] { failing.next(); });
    QVERIFY2(error.contains("cannot decode") && error.contains("/i"), qPrintable(error));
  }

  void cliStatsVocabIndexQuery() {
    const QString dir = expnet_test::makeTempDir("cli");
    write(dir, "dataset_coco.json", kKarpathy);
    auto r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "stats", "--dataset", dir, "--json", "--min-count", "1"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonObject stats = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(stats.value("images").toInt(), 4);
    QCOMPARE(stats.value("captions").toInt(), 5);
    QCOMPARE(stats.value("images_per_split").toObject().value("restval").toInt(), 1);
    QCOMPARE(stats.value("vocabulary_size").toInt(), 4 + 7);  // a dog on grass runs two dogs

    const QString vocab = dir + "/vocab.json";
    r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "vocab", "--dataset", dir, "--min-count", "2", "--out", vocab});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QCOMPARE(Vocabulary::load_json(vocab.toStdString()).words(), (std::vector<std::string>{"EOS", "PAD", "SOS", "UNK", "a", "dog"}));

    const QString db = dir + "/index.sqlite";
    r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "index", "--dataset", dir + "/dataset_coco.json", "--db", db});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "query", "--db", db, "--text", "dog", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 1);  // image 11 only: "dogs" (image 12) is another word
    const QJsonObject first = QJsonDocument::fromJson(lines[0]).object();
    QCOMPARE(first.keys().size(), 5);
    QCOMPARE(first.value("cocoid").toInt(), 11);
    QCOMPARE(first.value("filepath").toString(), QStringLiteral("train2014"));
    QCOMPARE(first.value("split").toString(), QStringLiteral("train"));
    QCOMPARE(first.value("captions").toArray().size(), 2);

    r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "stats", "--dataset", dir + "/nothing.json"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("error: ") && r.err.contains("nothing.json"), r.err.constData());
    r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "query", "--db", db, "--split", "nope"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("unknown split 'nope'"), r.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestDatasets)
#include "test_datasets.moc"
