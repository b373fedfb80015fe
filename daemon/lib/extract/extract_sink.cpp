#include "daemon/lib/extract/extract_sink.hpp"

namespace rocecap::daemon {

namespace codif = capture::codif;

ExtractSink::ExtractSink(const writers::DumpFiles& files, const RecordedFrame& model, bool vdif)
    : model_(model), vdif_(vdif), clock_{model.h, model.t} {
  using writers::dump_path_maker;
  using writers::dump_rotation;
  if (!files.raw.empty()) raw_.emplace(dump_path_maker(files.raw), dump_rotation());
  if (!files.codifhdr.empty()) hdr_.emplace(dump_path_maker(files.codifhdr), dump_rotation());
  if (!files.vdifhdr.empty()) vhdr_.emplace(dump_path_maker(files.vdifhdr), dump_rotation());
}

void ExtractSink::frame(const RecordedFrame& f, std::span<const std::byte> bytes) {
  const auto header = bytes.first(f.header_bytes);
  const auto data = bytes.subspan(f.header_bytes, f.frame_bytes - f.header_bytes);
  if (raw_) {
    raw_->set_next_index(f.index);
    check(vdif_ ? raw_->write_vdif_frame(header, data)
                : raw_->write_frame(header.first<codif::kHeaderBytes>(), data));
  }
  if (hdr_) {
    hdr_->set_next_index(f.index);
    check(hdr_->write_frame(header.first<codif::kHeaderBytes>()));
  }
  if (vhdr_) {
    vhdr_->set_next_index(f.index);
    check(vhdr_->write_frame(header));
  }
  if (is_fill_frame(f, bytes)) {
    ++out_.fill_frames;
    gap(f.index, 1, "lost by the stream: a fill frame in the recording");
  } else {
    ++out_.frames;
  }
}

void ExtractSink::fill(uint64_t index, uint64_t count, const std::string& why) {
  if (count == 0) return;
  if (raw_) raw_->set_next_index(index);
  if (hdr_) hdr_->set_next_index(index);
  if (vhdr_) vhdr_->set_next_index(index);
  if (vdif_) {
    if (raw_) check(raw_->write_vdif_fill(model_.vh, model_.vt, index, count));
    if (vhdr_) check(vhdr_->write_fill(model_.vh, model_.vt, index, count));
  } else {
    const codif::Header first = codif::at_index(model_.h, model_.t, index);
    if (raw_) check(raw_->write_fill(first, model_.t, count));
    if (hdr_) check(hdr_->write_fill(first, model_.t, count));
  }
  out_.fill_frames += count;
  gap(index, count, why);
}

// Runs of fill frames as a dump lists them, one per run and reason.
void ExtractSink::gap(uint64_t index, uint64_t count, const std::string& why) {
  if (!out_.gaps.empty()) {
    capture::GapEvent& last = out_.gaps.back();
    if (last.first_index + last.count == index && reasons_.back() == why) {
      last.count += count;
      return;
    }
  }
  out_.gaps.push_back({index, count, clock_.time_of(index)});
  reasons_.push_back(why);
}

void ExtractSink::check(const writers::Status& s) {
  writers::note_dump_error(out_, s);
}

void ExtractSink::close() {
  if (raw_) writers::close_dump_writer(*raw_, "raw", out_);
  if (hdr_) writers::close_dump_writer(*hdr_, "codifhdr", out_);
  if (vhdr_) writers::close_dump_writer(*vhdr_, "vdifhdr", out_);
  writers::settle_dump_counts(out_, raw_ ? "raw" : hdr_ ? "codifhdr" : "vdifhdr");
}

}  // namespace rocecap::daemon
