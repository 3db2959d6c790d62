// SequenceTable: slots, versions and the running list (sequence_table.hpp).
#include "trnsim/serving/sequence_table.hpp"

#include <algorithm>

namespace trnsim::serving {

std::uint32_t SequenceTable::add(const Request& r) {
    std::uint32_t s = 0;
    if (!free_slots_.empty()) {
        s = free_slots_.back();
        free_slots_.pop_back();
    } else {
        s = static_cast<std::uint32_t>(seqs_.size());
        seqs_.emplace_back();
    }
    Seq& q = seqs_[s];
    const std::uint32_t version = q.version;
    q = Seq{};
    q.version = version + 1;
    q.req = r;
    return s;
}

void SequenceTable::free(std::uint32_t s) {
    Seq& q = seqs_[s];
    q.state = SeqState::free;
    ++q.version;
    free_slots_.push_back(s);
}

void SequenceTable::link(std::uint32_t s) {
    Seq& q = seqs_[s];
    q.admitted = admissions_++;
    q.prev = tail_;
    q.next = kNone;
    if (tail_ != kNone) {
        seqs_[tail_].next = s;
    } else {
        head_ = s;
    }
    tail_ = s;
    ++running_;
}

void SequenceTable::unlink(std::uint32_t s) {
    Seq& q = seqs_[s];
    if (q.prev != kNone) {
        seqs_[q.prev].next = q.next;
    } else {
        head_ = q.next;
    }
    if (q.next != kNone) {
        seqs_[q.next].prev = q.prev;
    } else {
        tail_ = q.prev;
    }
    q.prev = q.next = kNone;
    --running_;
}

void SequenceTable::erase(std::vector<std::uint32_t>& list, std::uint32_t s) {
    list.erase(std::find(list.begin(), list.end(), s));
}

std::vector<std::uint64_t> SequenceTable::ids() const {
    std::vector<std::uint64_t> ids;
    for (const Seq& q : seqs_) {
        if (q.state != SeqState::free) {
            ids.push_back(q.req.id);
        }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

void SequenceTable::clear() {
    seqs_.clear();
    free_slots_.clear();
    waiting_.clear();
    ready_.clear();
    head_ = tail_ = kNone;
    running_ = 0;
    prefilling_.clear();
    joining_.clear();
}

} // namespace trnsim::serving
